package driver

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Found reads the outcome of a query for one row: ok is false, and the
// error nil, when the query had no row (noRows is the engine's sentinel for
// it, sql.ErrNoRows or pgx.ErrNoRows), so that "nothing there" is an answer
// and only a failure is an error.
func Found(err, noRows error) (ok bool, _ error) {
	if errors.Is(err, noRows) {
		return false, nil
	}
	return err == nil, err
}

// TimeOrNull is t as the engine stores it (store), or nil (NULL) for the
// zero time: a column such as closed_at or paused_at that says "not yet".
func TimeOrNull[T any](t time.Time, store func(time.Time) T) any {
	if t.IsZero() {
		return nil
	}
	return store(t)
}

// AddRemovedUnread records the rows retention removed unread, by group
// name, with add (one engine statement a group), in name order: every
// engine then locks the groups' rows in one order, and two retention passes
// cannot deadlock on them.
func AddRemovedUnread(counts map[string]int64, add func(group string, n int64) error) error {
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if err := add(name, counts[name]); err != nil {
			return err
		}
	}
	return nil
}

// ReadVersionStats reads the rows per version (counts, which also says how
// many rows it counted past its marks) and the compaction heads per version
// (heads), and joins them with VersionStatsOf: every engine's Health lists
// versions from the same two reads.
func ReadVersionStats(counts func() (map[int]int64, int64, error), heads func() (map[int]int64, error)) (_ []VersionStats, past int64, _ error) {
	rows, past, err := counts()
	if err != nil {
		return nil, 0, err
	}
	h, err := heads()
	return VersionStatsOf(rows, h), past, err
}

// GroupNotFound is ErrGroupNotFound naming the group, as every engine
// reports a group it has no row of.
func GroupNotFound(group string) error {
	return fmt.Errorf("group %q: %w", group, ErrGroupNotFound)
}

// HistoryTime is how a failure history entry records its time on every
// engine: RFC 3339 in UTC, at most microseconds.
func HistoryTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}
