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

// ScanUnreadCount reads a row of (version, routing key, rows) as the unread
// rows of group in partition: every engine's Health counts unread rows by
// version and routing key.
func ScanUnreadCount(group string, partition int) func(RowScanner) (UnreadCount, error) {
	return func(r RowScanner) (UnreadCount, error) {
		u := UnreadCount{Group: group, Partition: partition}
		err := r.Scan(&u.Version, &u.RoutingKey, &u.Rows)
		return u, err
	}
}

// ScanExceptionCount reads a row of (group, version, state, count).
func ScanExceptionCount(r RowScanner) (ExceptionCount, error) {
	var e ExceptionCount
	err := r.Scan(&e.Group, &e.Version, &e.State, &e.Count)
	return e, err
}
