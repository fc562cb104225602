package sqldb

import (
	"database/sql"
	"fmt"
)

// Inserted checks that an INSERT of n rows into a stream's log inserted
// them all, and returns the id LastInsertId reports: MySQL's first of the
// statement, SQLite's last.
func Inserted(res sql.Result, streamID int64, n int) (int64, error) {
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("append to stream %d: %w", streamID, err)
	}
	if got, err := res.RowsAffected(); err != nil || got != int64(n) {
		return 0, fmt.Errorf("append to stream %d: inserted %d rows of %d (%v)", streamID, got, n, err)
	}
	return id, nil
}
