package driver

import "slices"

// VersionStatsOf joins the rows per version (from the row counts) and the
// compaction heads per version into one entry for each version that has
// either, in version order, so that every engine's Health lists versions
// alike.
func VersionStatsOf(rows, heads map[int]int64) []VersionStats {
	var out []VersionStats
	for v, n := range rows {
		if n > 0 || heads[v] > 0 {
			out = append(out, VersionStats{Version: v, Rows: max(n, 0), Heads: heads[v]})
		}
	}
	for v, n := range heads {
		if _, seen := rows[v]; !seen && n > 0 {
			out = append(out, VersionStats{Version: v, Heads: n})
		}
	}
	slices.SortFunc(out, func(a, b VersionStats) int { return a.Version - b.Version })
	return out
}
