package driver

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestFound(t *testing.T) {
	t.Parallel()
	noRows, broken := errors.New("no rows"), errors.New("broken")
	for _, tc := range []struct {
		name    string
		err     error
		ok      bool
		wantErr error
	}{
		{"a row", nil, true, nil},
		{"no row is an answer", noRows, false, nil},
		{"a wrapped no row is an answer", errors.Join(noRows), false, nil},
		{"a failure is an error", broken, false, broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ok, err := Found(tc.err, noRows)
			if ok != tc.ok || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Found(%v) = %v, %v; want %v, %v", tc.err, ok, err, tc.ok, tc.wantErr)
			}
		})
	}
}

func TestTimeOrNull(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	micros := func(t time.Time) int64 { return t.UnixMicro() }
	for _, tc := range []struct {
		name string
		t    time.Time
		want any
	}{
		{"zero is NULL", time.Time{}, nil},
		{"a time is stored", at, at.UnixMicro()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := TimeOrNull(tc.t, micros); got != tc.want {
				t.Fatalf("TimeOrNull(%v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

func TestAddRemovedUnread(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	for _, tc := range []struct {
		name    string
		counts  map[string]int64
		failAt  string
		want    []string
		wantErr error
	}{
		{"none", nil, "", nil, nil},
		{"in name order", map[string]int64{"c": 3, "a": 1, "b": 2}, "", []string{"a=1", "b=2", "c=3"}, nil},
		{"stops at the first failure", map[string]int64{"c": 3, "a": 1, "b": 2}, "b", []string{"a=1"}, stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			err := AddRemovedUnread(tc.counts, func(group string, n int64) error {
				if group == tc.failAt {
					return stop
				}
				got = append(got, group+"="+string(rune('0'+n)))
				return nil
			})
			if !errors.Is(err, tc.wantErr) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("AddRemovedUnread = %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestReadVersionStats(t *testing.T) {
	t.Parallel()
	broken := errors.New("broken")
	counts := func(err error) func() (map[int]int64, int64, error) {
		return func() (map[int]int64, int64, error) { return map[int]int64{1: 2}, 5, err }
	}
	heads := func(err error) func() (map[int]int64, error) {
		return func() (map[int]int64, error) { return map[int]int64{1: 1, 2: 3}, err }
	}
	for _, tc := range []struct {
		name     string
		counts   func() (map[int]int64, int64, error)
		heads    func() (map[int]int64, error)
		want     []VersionStats
		wantPast int64
		wantErr  error
	}{
		{"joined", counts(nil), heads(nil), []VersionStats{{Version: 1, Rows: 2, Heads: 1}, {Version: 2, Heads: 3}}, 5, nil},
		{"counts fail", counts(broken), heads(nil), nil, 0, broken},
		{"heads fail", counts(nil), heads(broken), nil, 5, broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, past, err := ReadVersionStats(tc.counts, tc.heads)
			if !errors.Is(err, tc.wantErr) || past != tc.wantPast || (err == nil && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("ReadVersionStats = %+v, %d, %v; want %+v, %d, %v", got, past, err, tc.want, tc.wantPast, tc.wantErr)
			}
		})
	}
}

func TestScanClient(t *testing.T) {
	t.Parallel()
	started, seen := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC)
	micros := func(us int64) time.Time { return time.UnixMicro(us).UTC() }
	groups := EncodeClientGroups([]ClientGroup{{StreamID: 3, Group: "billing"}})
	running := ClientRecord{Instance: "i1", Identity: "worker", Host: "h", PID: 7, LibraryVersion: "v1",
		Groups: []ClientGroup{{StreamID: 3, Group: "billing"}}, StartedAt: started, LastSeen: seen, HeartbeatEvery: 2 * time.Second}
	closed := running
	closed.ClosedAt = seen
	for _, tc := range []struct {
		name    string
		row     scanned
		want    ClientRecord
		wantErr bool
	}{
		{"running", scanned{"i1", "worker", "h", 7, "v1", groups, started.UnixMicro(), seen.UnixMicro(), int64(2_000_000), nil}, running, false},
		{"closed", scanned{"i1", "worker", "h", 7, "v1", groups, started.UnixMicro(), seen.UnixMicro(), int64(2_000_000), seen.UnixMicro()}, closed, false},
		{"stored groups unreadable", scanned{"i1", "worker", "h", 7, "v1", "{", started.UnixMicro(), seen.UnixMicro(), int64(2_000_000), nil}, ClientRecord{}, true},
		{"short row", scanned{"i1"}, ClientRecord{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ScanClient(tc.row, micros)
			if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("ScanClient = %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestGroupNotFound(t *testing.T) {
	t.Parallel()
	err := GroupNotFound("billing")
	if !errors.Is(err, ErrGroupNotFound) || err.Error() != `group "billing": `+ErrGroupNotFound.Error() {
		t.Fatalf("GroupNotFound = %v", err)
	}
}
