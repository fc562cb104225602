package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestStatementText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, got, want string
	}{
		{"no placeholders", Placeholders(0), ""},
		{"three placeholders", Placeholders(3), "?, ?, ?"},
		{"rows of a VALUES list", Repeated(2, "(?, ?)", ", "), "(?, ?), (?, ?)"},
		{"alternatives", Repeated(3, "x", " OR "), "x OR x OR x"},
		{"none repeated", Repeated(-1, "x", ","), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestVersionFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		versions []int
		pred     string
		args     []any
	}{
		{"every version", nil, "1", nil},
		{"no version", []int{}, "0", nil},
		{"two versions", []int{2, 5}, "v IN (?, ?)", []any{2, 5}},
	} {
		pred, args := VersionFilter("v", tc.versions)
		if pred != tc.pred || !slices.Equal(args, tc.args) {
			t.Errorf("%s: %q %v, want %q %v", tc.name, pred, args, tc.pred, tc.args)
		}
	}
}

type result int64

func (r result) LastInsertId() (int64, error) { return 40 + int64(r), nil }
func (r result) RowsAffected() (int64, error) { return int64(r), nil }

func TestChanged(t *testing.T) {
	t.Parallel()
	errNone, errFailed := errors.New("none"), errors.New("failed")
	for _, tc := range []struct {
		name string
		n    result
		err  error
		want error
	}{
		{"one row changed", 1, nil, nil},
		{"nothing changed", 0, nil, errNone},
		{"the statement failed", 0, errFailed, errFailed},
	} {
		if got := Changed(int64(tc.n), tc.err, errNone); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// row is a result row whose columns are assigned to the destinations as
// database/sql would convert them for these tests' types.
type row []any

func (r row) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return errors.New("wrong column count")
	}
	for i, v := range r {
		switch d := dest[i].(type) {
		case *int64:
			*d = v.(int64)
		case *int:
			*d = v.(int)
		case *string:
			*d = v.(string)
		case *[]byte: // database/sql copies a string into a []byte
			*d = []byte(v.(string))
		case *bool:
			*d = v.(bool)
		case *driver.StartPosition:
			*d = driver.StartPosition(v.(int))
		case **int64: // a nullable column: nil is NULL
			if v == nil {
				*d = nil
			} else {
				x := v.(int64)
				*d = &x
			}
		default:
			return errors.New("unexpected destination")
		}
	}
	return nil
}

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func TestScanStreamAndGroup(t *testing.T) {
	t.Parallel()
	c, err := ScanStream(row{int64(7), "orders", 4, true, int64(90e6), int64(1000), true, int64(1e6), int64(3)}, micros)
	want := driver.StreamConfig{ID: 7, Name: "orders", Partitions: 4, Compacted: true, CreatedAt: micros(1e6), Generation: 3,
		Retention: driver.Retention{MaxAge: 90 * time.Second, MaxRows: 1000, Hard: true}}
	if err != nil || c != want {
		t.Fatalf("stream %+v, %v; want %+v", c, err, want)
	}
	var extra bool
	g, removed, err := ScanGroup(row{int64(7), "fraud", 2, false, `["eu.#"]`, `[]`, 1, int64(2e6), int64(3), nil, true}, micros, &extra)
	if err != nil || removed != 3 || !extra || g.Name != "fraud" || g.SchemaVersion != 2 || !slices.Equal(g.Bindings, []string{"eu.#"}) ||
		g.ConvertsFrom != nil || g.Start != driver.StartPosition(1) || !g.CreatedAt.Equal(micros(2e6)) || !g.PausedAt.IsZero() {
		t.Fatalf("group %+v, removed %d, extra %v, %v", g, removed, extra, err)
	}
	if g, _, err := ScanGroup(row{int64(7), "paused", 2, false, `[]`, `[]`, 1, int64(2e6), int64(0), int64(5e6)}, micros); err != nil || !g.PausedAt.Equal(micros(5e6)) {
		t.Fatalf("a paused group read as %+v, %v; want paused at %v", g, err, micros(5e6))
	}
	if _, _, err := ScanGroup(row{int64(7), "bad", 2, false, `not json`, `[]`, 1, int64(0), int64(0), nil}, micros); err == nil {
		t.Fatal("stored bindings that are not JSON were read")
	}
	b, cv, err := EncodeGroupLists(driver.GroupConfig{ConvertsFrom: []int{1}})
	if err != nil || b != "[]" || cv != "[1]" {
		t.Fatalf("EncodeGroupLists = %q %q %v", b, cv, err)
	}
}

func TestRenamed(t *testing.T) {
	t.Parallel()
	failed := errors.New("failed")
	for _, tc := range []struct {
		name      string
		n         result
		err       error
		duplicate bool
		want      error
	}{
		{"renamed", 1, nil, false, nil},
		{"the name is taken", 0, failed, true, driver.ErrStreamExists},
		{"no such stream", 0, nil, false, driver.ErrStreamNotFound},
		{"a failure", 0, failed, false, failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Renamed(int64(tc.n), tc.err, tc.duplicate); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Fatalf("Renamed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewStreamID(t *testing.T) {
	t.Parallel()
	failed := errors.New("failed")
	for _, tc := range []struct {
		name      string
		err       error
		duplicate bool
		want      int64
		wantErr   error
	}{
		{"created", nil, false, 41, nil},
		{"the name is taken", failed, true, 0, driver.ErrStreamExists},
		{"a failure", failed, false, 0, failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := NewStreamID(41, tc.err, tc.duplicate)
			if id != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("NewStreamID = %d, %v; want %d, %v", id, err, tc.want, tc.wantErr)
			}
		})
	}
}

// execLog is a Querier that records the statements it runs, and fails the
// one named fail.
type execLog struct {
	Querier
	ran  []string
	fail string
}

func (e *execLog) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	e.ran = append(e.ran, fmt.Sprint(query, args))
	if strings.Contains(query, e.fail) && e.fail != "" {
		return nil, errors.New("failed")
	}
	return result(1), nil
}

func TestExecEach(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fail    string
		want    []string
		wantErr bool
	}{
		{"each table, in order", "", []string{"DELETE FROM a WHERE stream_id = ?[7]", "DELETE FROM b WHERE stream_id = ?[7]"}, false},
		{"stops at a failure", "FROM a", []string{"DELETE FROM a WHERE stream_id = ?[7]"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &execLog{fail: tc.fail}
			err := ExecEach(context.Background(), On(q), []string{"a", "b"}, func(table string) string { return "DELETE FROM " + table + " WHERE stream_id = ?" }, 7)
			if (err != nil) != tc.wantErr || !slices.Equal(q.ran, tc.want) {
				t.Fatalf("ExecEach ran %q, %v; want %q (error %v)", q.ran, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDeferRows(t *testing.T) {
	t.Parallel()
	p := driver.ClaimParams{Stream: driver.StreamConfig{ID: 7}, Group: "g", Holder: "h"}
	rows := []driver.Row{{ID: 1, Partition: 0, SchemaVersion: 2}, {ID: 2, Partition: 0, SchemaVersion: 2}, {ID: 3, Partition: 1, SchemaVersion: 3}}
	insert := func(n int) string { return fmt.Sprintf("INSERT %d", n) }
	for _, tc := range []struct {
		name    string
		rows    []driver.Row
		fail    string
		want    []string
		wantN   int
		wantErr bool
	}{
		{"none", nil, "", nil, 0, false},
		{"in chunks", rows, "", []string{
			"INSERT 2[7 g 1 0 2 now h now 7 g 2 0 2 now h now]",
			"INSERT 1[7 g 3 1 3 now h now]"}, 2, false}, // each chunk reports one row changed
		{"a failure", rows, "INSERT 2", []string{"INSERT 2[7 g 1 0 2 now h now 7 g 2 0 2 now h now]"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &execLog{fail: tc.fail}
			n, err := DeferRows(context.Background(), q, p, tc.rows, "now", 2, insert)
			if (err != nil) != tc.wantErr || n != tc.wantN || !slices.Equal(q.ran, tc.want) {
				t.Fatalf("DeferRows = %d, %v after %q; want %d after %q", n, err, q.ran, tc.wantN, tc.want)
			}
		})
	}
}

func TestEachRowUntil(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		rows, at  int // the query's rows; done after that many were read
		want      []int64
		wantFetch int
	}{
		{"every row", 5, 10, []int64{1, 2, 3, 4, 5}, 5},
		{"stops without fetching the rest", 5, 2, []int64{1, 2}, 2},
		{"done at once", 5, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, fetched := openFake()
			defer db.Close()
			var got []int64
			err := EachRowUntil(context.Background(), db, strconv.Itoa(tc.rows), nil, func() bool { return len(got) >= tc.at }, func(r *sql.Rows) error {
				v, err := Column[int64](r)
				got = append(got, v)
				return err
			})
			if err != nil || !slices.Equal(got, tc.want) || *fetched != tc.wantFetch {
				t.Fatalf("got %v (fetched %d), %v; want %v (fetched %d)", got, *fetched, err, tc.want, tc.wantFetch)
			}
		})
	}
}

func TestRecordFates(t *testing.T) {
	t.Parallel()
	many := make([]int64, fateChunk+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	p := driver.ClaimParams{Stream: driver.StreamConfig{ID: 7}, Group: "g", Token: "tok", Holder: "h", LastError: "lease expired", Now: at}
	w := DueWrites{Failures: "FAILURES", Now: "now", LeaseUntil: "until"}
	bury := "UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = ?, first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, FAILURES"
	buryArgs := fmt.Sprint([]any{"lease expired", "now", "now", driver.CutHistoryError("lease expired"), driver.HistoryTime(at)})
	buryArgs = buryArgs[1 : len(buryArgs)-1]
	lease := "UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = ?, lease_token = ?, holder = ?, updated_at = ?"
	where := func(n int) string {
		return " WHERE stream_id = ? AND group_name = ? AND msg_id IN (" + Placeholders(n) + ")"
	}
	for _, tc := range []struct {
		name    string
		fates   driver.DueFates
		fail    string
		want    []string
		wantErr bool
	}{
		{"nothing decided", driver.DueFates{}, "", nil, false},
		{"each fate its statement, its own arguments first", driver.DueFates{Resolve: []int64{1}, Bury: []int64{2, 3}, Lease: []int64{4}}, "", []string{
			"DELETE FROM delivery_exception" + where(1) + "[7 g 1]",
			bury + where(2) + "[" + buryArgs + " 7 g 2 3]",
			lease + where(1) + "[until tok h now 7 g 4]"}, false},
		{"a statement per chunk of ids", driver.DueFates{Lease: many}, "", []string{
			lease + where(fateChunk) + fmt.Sprint(append([]any{"until", "tok", "h", "now", 7, "g"}, Args(many[:fateChunk])...)),
			lease + where(1) + fmt.Sprintf("[until tok h now 7 g %d]", fateChunk+1)}, false},
		{"stops at a failure", driver.DueFates{Resolve: []int64{1}, Bury: []int64{2}, Lease: []int64{3}}, "state = 'dead'", []string{
			"DELETE FROM delivery_exception" + where(1) + "[7 g 1]",
			bury + where(1) + "[" + buryArgs + " 7 g 2]"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &execLog{fail: tc.fail}
			err := RecordFates(context.Background(), q, p, &tc.fates, w)
			if (err != nil) != tc.wantErr || !slices.Equal(q.ran, tc.want) {
				t.Fatalf("RecordFates ran %q, %v; want %q (error %v)", q.ran, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestEncodeDecodeInts(t *testing.T) {
	t.Parallel()
	for _, ids := range [][]int64{nil, {7}, {1, 2, 300000000000}} {
		text := EncodeInts(ids)
		if strings.Contains(text, " ") {
			t.Errorf("EncodeInts(%v) = %q: stored text has no spaces, so settles can compare it", ids, text)
		}
		back, err := DecodeInts[int64](text)
		if err != nil || !slices.Equal(back, ids) {
			t.Errorf("DecodeInts(%q) = %v, %v; want %v", text, back, err, ids)
		}
	}
	if got := EncodeInts([]int{1, 2}); got != "[1,2]" {
		t.Errorf("EncodeInts = %q", got)
	}
	// As an engine's JSON functions write an array.
	if got, err := DecodeInts[int](" [1, 2 ,3] "); err != nil || !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("with spaces: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,2", "[1,x]", "[1,,2]", "{}"} {
		if got, err := DecodeInts[int64](bad); err == nil {
			t.Errorf("DecodeInts(%q) = %v, want an error", bad, got)
		}
	}
}
