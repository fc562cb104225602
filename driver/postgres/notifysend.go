package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// notifyEvery is the producer-side debounce (driver.Debounce): a process
// sends at most one NOTIFY per stream in this interval from its own
// appends, and a trailing one after a burst. NOTIFY is worth debouncing:
// PostgreSQL serializes the commits of all notifying transactions of a
// cluster on one lock, held through the commit's WAL flush.
const notifyEvery = 5 * time.Millisecond

func (d *Driver) notifyState(streamID int64) *driver.Debounce {
	v, _ := d.notifyStates.LoadOrStore(streamID, &driver.Debounce{})
	return v.(*driver.Debounce)
}

// notifyNow reports whether an append to the stream should carry a NOTIFY
// in its own transaction. One that does not must call notifyAfterCommit
// once it has committed.
func (d *Driver) notifyNow(streamID int64) bool {
	return d.notify && d.notifyState(streamID).Now(notifyEvery)
}

// notifyAfterCommit makes sure a NOTIFY follows an append that carried
// none, at the debounce interval's end.
func (d *Driver) notifyAfterCommit(streamID int64) {
	if !d.notify {
		return
	}
	d.notifyState(streamID).After(notifyEvery, func() {
		ch := d.channel(streamID)
		if ch == "" || d.check() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = d.pool.Exec(ctx, notifyAlone, []string{ch}) // a hint: polling covers a failure
	})
}

// notifyAlone notifies the channels $1 (a burst's trailing NOTIFY,
// txWakes') from a transaction of its own that commits without waiting for
// the WAL flush (synchronous_commit off for it alone): it writes no rows, so
// a crash can lose only the hint, which polling covers; and the lock of
// notifying commits (notifyEvery) is then held through no flush, so the
// wake-up leaves sooner and every other notifying commit waits less.
const notifyAlone = `SELECT pg_notify(c, '') FROM set_config('synchronous_commit', 'off', true), unnest($1::text[]) AS c`

// Wake-ups for rows produced in callers' transactions. Such a transaction
// carries no NOTIFY (its lock, notifyEvery, cost 8 committers on 8
// partitions a quarter of their rate). Instead the append reports its
// transaction id, which driver.TxWatch watches: txWakeCheck asks the server
// which of them have ended (pg_xact_status, one statement for all) and
// sends one NOTIFY per stream with committed rows, from a transaction of
// its own (notifyAlone). A consumer is woken only once the rows are
// visible: pg_xact_status says "committed" only after the transaction has
// left the running set, so a snapshot taken on the wake-up sees its rows.
// Rolled-back transactions are dropped without a wake-up.
type (
	txWakes = driver.TxWatch[txWake]
	txWake  struct{ channel, xid string }
)

// wakeAfterCommit watches the caller's transaction xid that appended to the
// stream of channel ch, to wake its consumers once it has committed.
func (d *Driver) wakeAfterCommit(ch, xid string) {
	d.txWakes.Add(txWake{channel: ch, xid: xid}, notifyEvery, (*txWakeCheck)(d))
}

// txWakeCheck is the driver as a driver.TxCheck.
type txWakeCheck Driver

// Check reports which of the transactions ended and notifies the channel
// of every stream one of them committed rows to, once per stream.
func (c *txWakeCheck) Check(ctx context.Context, batch []txWake) (ended []bool, err error) {
	d := (*Driver)(c)
	if err := d.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	xids := make([]string, len(batch))
	for i, p := range batch {
		xids[i] = p.xid
	}
	rows, err := d.pool.Query(ctx, `SELECT COALESCE(pg_xact_status(x::xid8), 'unknown') FROM unnest($1::text[]) WITH ORDINALITY AS u(x, ord) ORDER BY ord`, xids)
	var statuses []string
	if err == nil {
		statuses, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err == nil && len(statuses) != len(batch) {
		err = fmt.Errorf("%d statuses for %d transactions", len(statuses), len(batch))
	}
	if err != nil {
		return nil, err
	}
	ended = make([]bool, len(batch))
	var channels []string
	for i, st := range statuses {
		ended[i] = st != "in progress"
		if st == "committed" && !slices.Contains(channels, batch[i].channel) {
			channels = append(channels, batch[i].channel)
		}
	}
	if len(channels) > 0 {
		// A hint: a failure here costs the consumers a poll.
		_, err = d.pool.Exec(ctx, notifyAlone, channels)
	}
	return ended, err
}
