package driver

import (
	"context"
	"time"
)

// RetentionProbe is how a driver answers the questions RetainBound asks of
// a stream's log, each with an index dive of its own SQL.
type RetentionProbe struct {
	// Span returns the oldest and newest ids of the log; ok is false for an
	// empty log.
	Span func() (oldest, newest int64, ok bool, err error)
	// FirstYoung returns the id of the first row, in id order, produced at
	// or after t; ok is false when every row is older.
	FirstYoung func(t time.Time) (id int64, ok bool, err error)
	// NthNewest returns the id of the row n places below the newest (0 is
	// the newest); ok is false when the log has no more than n rows.
	NthNewest func(n int64) (id int64, ok bool, err error)
}

// RetentionStatements are an engine's SQL for the index dives of a
// RetentionProbe: the statements are the engine's, reading their answers
// is the same everywhere.
type RetentionStatements struct {
	// Span selects the log's oldest and newest ids (NULL for an empty log).
	Span string
	// FirstYoung selects the id of the first row, in id order, produced at
	// or after its one argument (a time as At stores it).
	FirstYoung string
	// NthNewest selects the id of the row its one argument, n, places below
	// the newest.
	NthNewest string
	// At is how the engine stores FirstYoung's time.
	At func(time.Time) any
}

// Probe answers RetainBound's questions with the statements, each run by
// row, which returns its one result row; noRows is the engine's sentinel
// for a query without one.
func (s RetentionStatements) Probe(row func(query string, args ...any) RowScanner, noRows error) RetentionProbe {
	one := func(query string, arg any) (id int64, ok bool, err error) {
		ok, err = Found(row(query, arg).Scan(&id), noRows)
		return id, ok, err
	}
	return RetentionProbe{
		Span: func() (int64, int64, bool, error) {
			var oldest, newest *int64
			if err := row(s.Span).Scan(&oldest, &newest); err != nil || oldest == nil || newest == nil {
				return 0, 0, false, err
			}
			return *oldest, *newest, true, nil
		},
		FirstYoung: func(t time.Time) (int64, bool, error) { return one(s.FirstYoung, s.At(t)) },
		NthNewest:  func(n int64) (int64, bool, error) { return one(s.NthNewest, n) },
	}
}

// RetainBound returns the id below which retention limits r put a log's
// rows at now (0: none), from the probe's index dives rather than a scan of
// the log, so that a pass with nothing to remove costs the same on any log.
// The age limit takes the rows older than MaxAge up to the first, in id
// order, that is not (as Kafka removes a segment only once its newest record
// is old): the walk to that row is as long as the old rows still in the
// log. The row limit takes nothing while the ids of the log span at most
// MaxRows; past that, the (MaxRows+1)th newest row and those before it.
// Drivers call it inside the transaction that removes the rows, so that
// every engine draws the line alike.
func RetainBound(r Retention, now time.Time, p RetentionProbe) (int64, error) {
	if r.MaxAge <= 0 && r.MaxRows <= 0 {
		return 0, nil // no limit: nothing to probe
	}
	oldest, newest, ok, err := p.Span()
	if err != nil || !ok {
		return 0, err
	}
	var bound int64
	if r.MaxAge > 0 {
		young, ok, err := p.FirstYoung(now.Add(-r.MaxAge))
		switch {
		case err != nil:
			return 0, err
		case ok:
			bound = young
		default:
			bound = newest + 1 // every row is old
		}
	}
	if r.MaxRows > 0 && newest-oldest+1 > r.MaxRows {
		cut, ok, err := p.NthNewest(r.MaxRows)
		if err != nil {
			return 0, err
		}
		if ok {
			bound = max(bound, cut+1)
		}
	}
	if bound <= oldest {
		return 0, nil
	}
	return bound, nil
}

// RowScanner reads the columns of one result row: *sql.Rows, *sql.Row,
// pgx.Rows and pgx.Row all are one.
type RowScanner interface{ Scan(dest ...any) error }

// ScanRetainCandidate reads a retention candidate from a result row of its
// id, partition, schema version and routing key, in that order.
func ScanRetainCandidate(r RowScanner) (RetainCandidate, error) {
	var c RetainCandidate
	err := r.Scan(&c.ID, &c.Partition, &c.Version, &c.RoutingKey)
	return c, err
}

// Held is what CountRemovedUnread counts as held: by group name, the ids of
// the rows the group has an exception or a lease for.
type Held map[string]map[int64]bool

// Scan adds the (group name, row id) of one result row.
func (h Held) Scan(r RowScanner) error {
	var group string
	var id int64
	if err := r.Scan(&group, &id); err != nil {
		return err
	}
	if h[group] == nil {
		h[group] = map[int64]bool{}
	}
	h[group][id] = true
	return nil
}

// RetainIDs returns the ids of rows, in their order.
func RetainIDs(rows []RetainCandidate) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// RetainSteps are one engine's statements for a Retain pass, each run in the
// transaction the driver opened for it: the SQL and the locks stay the
// engine's, the order of the pass and its decisions are RetainPass's.
type RetainSteps interface {
	// Stream reads the stream's configuration (locking it where the engine
	// orders maintenance by it).
	Stream(ctx context.Context, streamID int64) (StreamConfig, error)
	// Probe answers RetainBound's questions of the stream's log.
	Probe(ctx context.Context, stream StreamConfig) RetentionProbe
	// Victims reads, in id order, up to limit rows below bound that the
	// limits remove: under a soft limit only the rows every group has
	// passed and none holds (no batch member either).
	Victims(ctx context.Context, stream StreamConfig, bound int64, limit int) ([]RetainCandidate, error)
	// Unread is asked under a hard limit only: the stream's groups with
	// their cursors, and the victims each group holds (an exception or a
	// batch lease), for CountRemovedUnread.
	Unread(ctx context.Context, stream StreamConfig, victims []RetainCandidate) ([]GroupStats, Held, error)
	// Remove deletes the victims and adds removedUnread to the groups'
	// counts (AddRemovedUnread), in the engine's lock order.
	Remove(ctx context.Context, stream StreamConfig, victims []RetainCandidate, removedUnread map[string]int64) error
}

// RetainPass is one pass of retention over a stream, the same on every
// engine: where the limits draw the line (RetainBound), which rows go, and,
// under a hard limit, how many each group lost unread (CountRemovedUnread).
func RetainPass(ctx context.Context, p RetainParams, s RetainSteps) (RetainResult, error) {
	res := RetainResult{RemovedUnread: map[string]int64{}}
	stream, err := s.Stream(ctx, p.StreamID)
	if err != nil {
		return res, err
	}
	bound, err := RetainBound(stream.Retention, p.Now, s.Probe(ctx, stream))
	if err != nil || bound == 0 {
		return res, err
	}
	victims, err := s.Victims(ctx, stream, bound, p.Limit)
	if err != nil || len(victims) == 0 {
		return res, err
	}
	if stream.Retention.Hard {
		groups, held, err := s.Unread(ctx, stream, victims)
		if err != nil {
			return res, err
		}
		res.RemovedUnread = CountRemovedUnread(groups, victims, held, p.Match)
	}
	res.Removed = int64(len(victims))
	return res, s.Remove(ctx, stream, victims, res.RemovedUnread)
}
