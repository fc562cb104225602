package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// busyConnector opens the driver's connections, and opens one again while
// opening it fails with SQLITE_BUSY, until the busy timeout. A connection
// runs the DSN's pragmas as it opens, journal_mode(WAL) among them, and on a
// file that other connections are switching to WAL at the same moment that
// pragma can be refused at once rather than after SQLite's busy handler
// waited: processes migrating one new file together failed now and then (5
// in 1,200 runs of API_MigrateAtOnce under load). Opening a connection now
// waits for the lock as long as a statement does.
type busyConnector struct {
	sqldriver.Connector
	timeout time.Duration
}

// newBusyConnector returns modernc's connector for dsn, wrapped.
func newBusyConnector(dsn string, timeout time.Duration) (busyConnector, error) {
	c, err := sqlite.NewConnector(dsn)
	return busyConnector{Connector: c, timeout: timeout}, err
}

// Connect opens a connection, again after a refusal for a busy lock, with
// pauses from 1 ms doubling up to 50 ms, while the busy timeout lasts.
func (c busyConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	deadline := time.Now().Add(c.timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		conn, err := c.Connector.Connect(ctx)
		if err == nil || !busy(err) || time.Now().Add(pause).After(deadline) {
			return conn, err
		}
		if err := driver.Sleep(ctx, pause); err != nil {
			return nil, err
		}
	}
}

// busy reports an engine error that a lock held elsewhere caused.
func busy(err error) bool {
	code, ok := primaryCode(err)
	return ok && code == sqlite3.SQLITE_BUSY
}
