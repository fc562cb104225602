package sqldb

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestScanRow reads the first row only, and says when there is none.
func TestScanRow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rows      int
		found     bool
		want      int64
		wantFetch int
	}{{0, false, 0, 0}, {1, true, 1, 1}, {3, true, 1, 1}} {
		db, fetched := openFake()
		var got int64
		found, err := scanRow(context.Background(), On(db), strconv.Itoa(tc.rows), nil, &got)
		db.Close()
		if err != nil || found != tc.found || got != tc.want || *fetched != tc.wantFetch {
			t.Errorf("%d rows: found %v, %d (fetched %d), %v; want %v, %d (fetched %d)", tc.rows, found, got, *fetched, err, tc.found, tc.want, tc.wantFetch)
		}
	}
}

// failingRows fail their read, and report it again from Close, as pgx's do.
type failingRows struct{ err error }

func (failingRows) Next() bool        { return false }
func (failingRows) Scan(...any) error { return nil }
func (r failingRows) Err() error      { return r.err }
func (r failingRows) Close() error    { return r.err }
func (r failingRows) Query(context.Context, string, ...any) (Rows, error) {
	return r, nil
}
func (failingRows) Exec(context.Context, string, ...any) (int64, error) { return 0, nil }

// A failed read is reported once, though the rows report it from both Err
// and Close: a user reads the engine's message once.
func TestFailedReadReportedOnce(t *testing.T) {
	t.Parallel()
	failure := errors.New("lock wait timeout (SQLSTATE 55P03)")
	_, err := collectOn(context.Background(), failingRows{failure}, "SELECT", nil, Column[int64])
	if !errors.Is(err, failure) || strings.Count(err.Error(), "55P03") != 1 {
		t.Errorf("err %q; want the failure once", err)
	}
}
