package sqldb

import (
	"errors"
	"testing"
)

type insertResult struct {
	id, n int64
	err   error
}

func (r insertResult) LastInsertId() (int64, error) { return r.id, r.err }
func (r insertResult) RowsAffected() (int64, error) { return r.n, nil }

// TestInserted: the id of an INSERT that inserted every row, else an error
// that names the stream.
func TestInserted(t *testing.T) {
	t.Parallel()
	if id, err := Inserted(insertResult{id: 7, n: 3}, 1, 3); id != 7 || err != nil {
		t.Errorf("3 of 3: %d, %v; want 7", id, err)
	}
	if _, err := Inserted(insertResult{id: 7, n: 2}, 1, 3); err == nil || err.Error() != "append to stream 1: inserted 2 rows of 3 (<nil>)" {
		t.Errorf("2 of 3: %v", err)
	}
	if _, err := Inserted(insertResult{err: errors.New("no id")}, 1, 3); err == nil || err.Error() != "append to stream 1: no id" {
		t.Errorf("no id: %v", err)
	}
}
