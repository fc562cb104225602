package postgres

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// AppendSharesValues reports whether the driver's append of rows binds the
// values the rows share once (sharedInsert) rather than an array of each
// (rowsInsert).
func AppendSharesValues(d *Driver, stream driver.StreamConfig, rows []driver.AppendRow) (bool, error) {
	b, _, err := d.appendBatch(stream, rows, false, false, true)
	if err != nil {
		return false, err
	}
	for _, q := range b.QueuedQueries {
		switch {
		case strings.Contains(q.SQL, sharedInsert):
			return true, nil
		case strings.Contains(q.SQL, rowsInsert):
			return false, nil
		}
	}
	return false, nil
}
