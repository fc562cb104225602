package postgres

import (
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// A claim woken by a notification: NOTIFY says rows were appended to the
// stream, so the probe (a round trip that would only say so again) is
// skipped, and the claim's first round trip also reads the rows past where
// the group's last claim here left the cursor it took rows from, which is
// where a consumer that keeps up finds the new rows. That takes an idle
// consumer's claim of a new row from four round trips (probe, begin and
// lock, read, record and commit) to two. Both are hints: the transaction
// locks the cursor and reads everything it relies on again (nextCursor uses
// the window only when it follows the locked cursor at its position), and
// a wrong guess costs a claim transaction that finds nothing, or a window
// read for nothing.
type wakeNotes struct {
	mu       sync.Mutex
	notified map[int64]int64 // stream id -> notifications received
	// Per group, under mu: the stream's notifications when the group's
	// last claim here began.
	seen driver.NextClaim[int64]
	// Per group: where its last claim here left the cursor it took rows
	// from (ok: it took some).
	left driver.NextClaim[busyState]
}

// notifiedFor counts a notification received for the stream.
func (w *wakeNotes) notifiedFor(stream int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.notified == nil {
		w.notified = map[int64]int64{}
	}
	w.notified[stream]++
}

// woken reports whether a notification for the stream arrived since the
// group's last claim here began, and where that claim left its cursor; it
// marks the notifications seen by the claim beginning now.
func (w *wakeNotes) woken(stream int64, group string) (bool, busyState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.notified[stream]
	left, _ := w.left.Hint(stream, group)
	if seen, _ := w.seen.Hint(stream, group); seen == n {
		return false, left
	}
	w.seen.Set(stream, group, n)
	return true, left
}

// leftAt notes where a claim of the group left the cursor it took rows from.
func (w *wakeNotes) leftAt(stream int64, group string, at busyState) {
	w.left.Set(stream, group, at)
}

// A claim of a stream of several partitions that takes fewer rows than its
// Limit from the cursor it locked first goes on to lock the next cursor
// with rows past it, and finds none when the new rows were all in that one
// partition, as they are when an idle consumer is woken for one append:
// the record, a lock that finds nothing and the COMMIT, two round trips
// more than on a stream of one partition. So the first round trip of a
// claim that is not hot (its last claim did not take its Limit) also asks
// whether any other cursor of the group has rows past it;
// when none has, the record of the locked partition's rows ends the claim
// with its COMMIT, as on a stream of one partition. The answer is a read,
// after the lock, of what was committed then: rows that commit later in
// another partition are left to the next claim, which their notification
// (or the poll) brings, as rows that commit after a claim's last lock are.
// A cursor that another claim holds counts as one with rows. The statement
// returns the partitions of up to two cursors with rows, and the locked
// partition is left out when its answer is read (readRowsElsewhere): it may
// have lost its rows between the lock and this read (retention), and
// counting cursors on the assumption that it has them then took the other
// partition's rows for none, leaving them to the poll.
func queueRowsElsewhere(b *pgx.Batch, p driver.ClaimParams) {
	b.Queue(`SELECT c.partition FROM group_cursor c WHERE c.stream_id = $1::bigint AND c.group_name = $2::text
		AND `+rowsPastCursor(p)+` LIMIT 2`, p.Stream.ID, p.Group)
}

// readRowsElsewhere reads queueRowsElsewhere's answer: alone, no cursor
// but the locked one (of partition locked) has rows past it.
func readRowsElsewhere(br pgx.BatchResults, locked int32) (alone bool, err error) {
	rows, err := br.Query()
	if err != nil {
		return false, err
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	return !slices.ContainsFunc(parts, func(part int32) bool { return part != locked }), err
}

// A woken claim of a stream of several partitions does not know in which
// partition the new rows are: where the group's last claim left a cursor is
// one partition of several (a producer without keys goes round them), and
// a window read past it was read for nothing when the rows are elsewhere,
// a round trip more to read them. So its first round trip reads, after the
// lock, the rows past every cursor of the group (queueWindows), a window
// per partition that has any; for an idle group woken by an append that is
// the new rows, and few. The claim takes the window of the cursor that
// round trip locked, read under that lock as a window past the cursor it
// left is, and only when it follows the cursor at its position
// (nextCursor); the others tell it nothing but where rows were.

// wokenWindowsMax bounds the partitions of a stream whose woken claims read
// the rows past every cursor: each window may hold driver.FirstWindow rows
// (the group may have a backlog where other members hold the cursors), and
// the claim uses one. A stream of more partitions reads past where the
// group's last claim left a cursor, as one of a single partition does.
const wokenWindowsMax = 16

// queueWindows queues the read of up to driver.FirstWindow(p.Limit) rows
// past every cursor of the group, for versions (the versions of the
// group's last claim here: the window is used only if the claim plans the
// same); readWindows reads them.
func queueWindows(b *pgx.Batch, p driver.ClaimParams, versions []int) {
	cols, vargs := scanColumns(p, versions)
	b.Queue(`SELECT `+cols+`, c.position
		FROM group_cursor c CROSS JOIN LATERAL (SELECT * FROM `+logTable(p.Stream.ID)+` m
			WHERE m.partition = c.partition AND m.id > c.position ORDER BY m.id LIMIT $3::integer) m
		WHERE c.stream_id = $1::bigint AND c.group_name = $2::text ORDER BY m.partition, m.id`,
		append([]any{p.Stream.ID, p.Group, int32(driver.FirstWindow(p.Limit))}, vargs...)...)
}

// readWindows reads what queueWindows queued: the window of each partition
// with rows past its cursor.
func readWindows(br pgx.BatchResults, p driver.ClaimParams, versions []int) (map[int32]*window, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int32]*window{}
	var w scannedRow
	var from int64
	sc := newRowScanner(&w.versionOK, &w.head, &from)
	for rows.Next() {
		if w.row, err = sc.scan(rows); err != nil {
			return nil, err
		}
		part := int32(w.row.Partition)
		win := out[part]
		if win == nil {
			win = &window{partition: part, from: from, size: driver.FirstWindow(p.Limit), versions: versions, done: true}
			out[part] = win
		}
		win.rows = append(win.rows, w)
	}
	return out, rows.Err()
}
