package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// A file database declares Notify: its write-ahead log is watched, and the
// suite's D13_WakeUps and API_WakeAcrossClients hold it to waking consumers
// of other clients. An in-memory one, which no other client can open, does
// not.
func TestNotifyDeclared(t *testing.T) {
	t.Parallel()
	if !sqlite.Open(filepath.Join(t.TempDir(), "wake.db")).Capabilities().Notify {
		t.Error("a file database does not declare Notify")
	}
	if sqlite.Open(":memory:").Capabilities().Notify {
		t.Error("an in-memory database declares Notify")
	}
}
