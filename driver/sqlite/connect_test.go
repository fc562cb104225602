package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// busyError is a real SQLITE_BUSY: a read of a file another connection
// holds exclusively, with no busy timeout.
func busyError(t *testing.T) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(`BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Exec(`SELECT count(*) FROM t`)
	if !busy(err) {
		t.Fatalf("read of an exclusively held file: %v, want SQLITE_BUSY", err)
	}
	return err
}

// refusing is a connector refused with err its first refusals times.
type refusing struct {
	sqldriver.Connector
	err      error
	refusals int
	calls    int
}

func (r *refusing) Connect(ctx context.Context) (sqldriver.Conn, error) {
	r.calls++
	if r.calls <= r.refusals {
		return nil, r.err
	}
	return r.Connector.Connect(ctx)
}

func TestBusyConnectorOpensAgainWhileBusy(t *testing.T) {
	t.Parallel()
	busyErr := busyError(t)
	inner, err := newBusyConnector(filepath.Join(t.TempDir(), "x.db"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		err       error
		refusals  int
		timeout   time.Duration
		wantCalls int
		wantErr   bool
	}{
		{"busy, then open", busyErr, 3, time.Minute, 4, false},
		{"busy past the timeout", busyErr, 1000, 20 * time.Millisecond, 0, true},
		{"another error at once", errors.New("cannot open"), 1, time.Minute, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &refusing{Connector: inner.Connector, err: tc.err, refusals: tc.refusals}
			conn, err := busyConnector{Connector: r, timeout: tc.timeout}.Connect(context.Background())
			if conn != nil {
				conn.Close()
			}
			if (err != nil) != tc.wantErr || (tc.wantErr && !errors.Is(err, tc.err)) {
				t.Fatalf("Connect: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantCalls > 0 && r.calls != tc.wantCalls {
				t.Errorf("%d connection attempts, want %d", r.calls, tc.wantCalls)
			}
			if tc.wantCalls == 0 && r.calls >= tc.refusals {
				t.Errorf("%d connection attempts in %v, want the refusal once the timeout passed", r.calls, tc.timeout)
			}
		})
	}
}
