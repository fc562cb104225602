package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ReadRowsQuery exposes ReadRows' statement and the options of its
// transaction, for plan tests.
var (
	ReadRowsQuery = readRowsQuery
	ReadRowsTx    = readRowsTx
)

// ManualTxWakes stops the driver from checking the transactions of
// ProduceTx on its own: the test runs each check with TxWakePass.
func ManualTxWakes(d *Driver) { d.txWakes.Manual() }

// TxWakePass runs one check of the watched transactions of ProduceTx and
// reports how many are still watched.
func TxWakePass(d *Driver) (int, error) {
	return d.txWakes.Pass(context.Background(), (*txWakeCheck)(d))
}

// Channel is the notification channel of a stream.
func Channel(d *Driver, streamID int64) string { return d.channel(streamID) }

// LockCursorQuery exposes the statement with which a claim locks a cursor,
// for plan tests.
func LockCursorQuery(stream driver.StreamConfig, group string) (string, []any) {
	return lockCursor(driver.ClaimParams{Stream: stream, Group: group}, []int32{}, 0)
}

// Debounce makes the appends to the stream in the next two seconds fall
// inside the debounce interval, as if one were carrying a NOTIFY then:
// they carry none, and the trailing NOTIFY follows at the interval's end,
// two seconds and notifyEvery from now.
func Debounce(d *Driver, streamID int64) {
	d.notifyState(streamID).Sent(time.Now().Add(2 * time.Second))
}

// RowsElsewhere runs, on its own, the question a claim's first round trip
// asks after locking the cursor of partition locked: whether another
// cursor of the group has rows past it (queueRowsElsewhere).
func RowsElsewhere(ctx context.Context, d *Driver, stream driver.StreamConfig, group string, locked int32) (bool, error) {
	b := &pgx.Batch{}
	queueRowsElsewhere(b, driver.ClaimParams{Stream: stream, Group: group})
	br := d.pool.SendBatch(ctx, b)
	defer br.Close()
	alone, err := readRowsElsewhere(br, locked)
	return !alone, err
}

// ArrayParameters wraps ids, nullable strings and byte strings in the
// driver's array parameter types, for a test that sends them through every
// way pgx sends a statement.
func ArrayParameters(ids []int64, strs []*string, bytes [][]byte) (any, any, any) {
	return int8s(ids), texts(strs), byteas(bytes)
}
