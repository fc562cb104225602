package postgres

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// connSecrets finds the password in every shape of connection string, also
// in ones pgx cannot parse, so that no error text shows it.
func TestConnSecrets(t *testing.T) {
	for _, tc := range []struct {
		conn string
		want []string
	}{
		{"postgres://app:pw1@host/db", []string{"pw1"}},
		{"postgresql://app:p%40ss@host/db", []string{"p%40ss", "p@ss"}},
		{"postgres://app:pa/ss@host:5432/db", []string{"pa/ss"}},
		{"postgres://app:pa@ss@host/db", []string{"pa@ss", "pa"}},
		{"postgres://:%:@00@0", []string{"%:@00", "%:", "@00"}}, // pgx redacts "%:" only (found by FuzzOpenURL)
		{"postgres://app:pw2@%zz/db", []string{"pw2"}},
		{"postgres://app:pw3%zz@host/db", []string{"pw3%zz"}},
		{"postgres://app@host/db?sslmode=disable&password=pw4", []string{"pw4"}},
		{"postgres://app@host/db?sslpassword=pw5", []string{"pw5"}},
		{"host=h password=pw6 dbname=db", []string{"pw6"}},
		{"host=h password = 'pw 7\\'x' dbname=db", []string{"pw 7'x"}},
		{"password=pw8", []string{"pw8"}},
		{"host=h password='pw9", []string{"pw9"}},
		{"postgres://app@host/db", nil},
	} {
		got := connSecrets(tc.conn)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("connSecrets(%q) = %q; want it to contain %q", tc.conn, got, w)
			}
		}
		if tc.want == nil && len(got) > 0 {
			t.Errorf("connSecrets(%q) = %q; want none", tc.conn, got)
		}
	}
}

// A write is retried, and reports ErrOutcomeUnknown, by how far it got: a
// batch that failed while pgx prepared it sent nothing to run, so it is
// retried after a dead connection and never reports an unknown outcome; a
// session the server ended (pg_terminate_backend, idle_session_timeout)
// before the commit is retried; a connection lost after the statements were
// sent, or during the commit, may have committed.
func TestRetryClassification(t *testing.T) {
	// pgx makes its ErrPreprocessingBatch only itself: joined with the
	// cause it wraps, it reads the same to errors.As.
	preprocessing := func(cause error) error { return errors.Join(pgx.ErrPreprocessingBatch{}, cause) }
	terminated := &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	idle := &pgconn.PgError{Severity: "FATAL", Code: "57P05", Message: "terminating connection due to idle-session timeout"}
	for _, tc := range []struct {
		name  string
		err   error
		stage stage
		retry bool
		kind  error
	}{
		{"connection lost while preparing", preprocessing(io.EOF), stageWrite, true, driver.ErrUnavailable},
		{"session terminated while preparing", preprocessing(terminated), stageWrite, true, driver.ErrUnavailable},
		{"arguments that do not encode", preprocessing(errors.New("mismatched param and argument count")), stageWrite, false, driver.ErrDatabase},
		{"session terminated before the statements ran", terminated, stageWrite, true, driver.ErrUnavailable},
		{"idle session timeout before the statements ran", idle, stageWrite, true, driver.ErrUnavailable},
		{"connection lost after the statements were sent", io.ErrUnexpectedEOF, stageWrite, false, driver.ErrOutcomeUnknown},
		{"session terminated during the commit", terminated, stageCommit, false, driver.ErrOutcomeUnknown},
		{"connection lost during the commit", io.EOF, stageCommit, false, driver.ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.stage
			if sentNothing(tc.err) {
				st = stageRead
			}
			if got := retryable(tc.err, st); got != tc.retry {
				t.Errorf("retryable = %v; want %v", got, tc.retry)
			}
			err := (&Driver{}).wrap(context.Background(), &staged{err: tc.err, stage: tc.stage}, tc.stage)
			if !errors.Is(err, tc.kind) {
				t.Errorf("wrap = %v; want %v", err, tc.kind)
			}
			if tc.kind != driver.ErrOutcomeUnknown && errors.Is(err, driver.ErrOutcomeUnknown) {
				t.Errorf("wrap = %v: an unknown outcome for a write that cannot have committed", err)
			}
		})
	}
}
