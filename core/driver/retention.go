package driver

import "time"

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
