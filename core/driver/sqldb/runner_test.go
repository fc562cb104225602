package sqldb

import (
	"context"
	"strconv"
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
