package driver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// engineError stands for a driver's own error type, which a caller (or the
// driver itself, to classify and advise) finds with errors.As.
type engineError struct{ code string }

func (e *engineError) Error() string {
	return "ERROR: canceling statement due to lock timeout (SQLSTATE " + e.code + ")"
}

// Redact scrubs a password where a connection string shows it, and nowhere
// else: a password equal to the user, the host, the database or a word of
// the message leaves those as they are, and an error whose text shows no
// credential keeps its engine error for errors.As.
func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, secret, text, want string
	}{
		{"URL, password equal to the user and a word of the message", "postgres",
			"postgres: failed to connect to postgres://postgres:postgres@127.0.0.1:5432/test: refused",
			"postgres: failed to connect to postgres://postgres:xxxxx@127.0.0.1:5432/test: refused"},
		{"URL, password equal to the host", "db1",
			"dial postgres://app:db1@db1:5432/app: no route to db1",
			"dial postgres://app:xxxxx@db1:5432/app: no route to db1"},
		{"URL, password equal to the database", "test",
			"cannot parse postgres://app:test@h/test?sslmode=bogus: test failed",
			"cannot parse postgres://app:xxxxx@h/test?sslmode=bogus: test failed"},
		{"URL, password in the query", "orders",
			"cannot parse postgres://app@h/orders?password=orders&sslmode=bogus",
			"cannot parse postgres://app@h/orders?password=xxxxx&sslmode=bogus"},
		{"URL, password with an @ and a slash", "p@ss/w",
			`parse "postgres://app:p@ss/w@h/db": invalid URL`,
			`parse "postgres://app:xxxxx@h/db": invalid URL`},
		{"key=value, password equal to the user and the database", "app",
			"cannot parse `host=h user=app password=app dbname=app`: app",
			"cannot parse `host=h user=app password=xxxxx dbname=app`: app"},
		{"key=value, quoted password with spaces", "lock timeout",
			"cannot parse host=h password = 'lock timeout' sslmode=bogus: lock timeout",
			"cannot parse host=h password = 'xxxxx' sslmode=bogus: lock timeout"},
		{"MySQL DSN, password equal to the user, host and database", "root",
			"mysql: parse DSN root:root@tcp(root:3306)/root?x=y: invalid DSN: root",
			"mysql: parse DSN root:xxxxx@tcp(root:3306)/root?x=y: invalid DSN: root"},
		{"a server echoing the password", "s3cret",
			`FATAL: password authentication failed for user "app" (password "s3cret")`,
			`FATAL: password authentication failed for user "app" (password "xxxxx")`},
		{"JSON", "timeout", `{"user":"timeout","password":"timeout"}`, `{"user":"timeout","password":"xxxxx"}`},
		{"no connection string: a common word stays", "postgres",
			"postgres: ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)",
			"postgres: ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)"},
		{"no secret", "", "postgres://app:pw@h/db", "postgres://app:pw@h/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := driver.Scrub(tc.text, tc.secret); got != tc.want {
				t.Errorf("Scrub(%q, %q) = %q; want %q", tc.text, tc.secret, got, tc.want)
			}
			engine := &engineError{code: "55P03"}
			err := driver.Redact(fmt.Errorf("%s: %w", tc.text, engine), tc.secret)
			if got, want := err.Error(), tc.want+": "+engine.Error(); got != want {
				t.Errorf("Redact: %q; want %q", got, want)
			}
			var ee *engineError
			if found := errors.As(err, &ee); found != (tc.text == tc.want) {
				t.Errorf("errors.As finds the engine's error: %v; want %v (only when nothing was scrubbed)", found, tc.text == tc.want)
			}
		})
	}
}

// A redacted error still matches the context error it wrapped, and
// ScrubEverywhere, for a connection string that did not parse, scrubs the
// password wherever its parser quoted it.
func TestRedactKeepsContextErrors(t *testing.T) {
	t.Parallel()
	err := driver.Redact(fmt.Errorf("dial postgres://app:pw@h/db: %w", context.DeadlineExceeded), "pw")
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "dial postgres://app:xxxxx@h/db: context deadline exceeded" {
		t.Errorf("Redact = %v; want the password scrubbed and context.DeadlineExceeded kept", err)
	}
	if got, want := driver.ScrubEverywhere(`invalid value "pw" for parseTime in u:pw@tcp(h)/db`, "pw"), `invalid value "xxxxx" for parseTime in u:xxxxx@tcp(h)/db`; got != want {
		t.Errorf("ScrubEverywhere = %q; want %q", got, want)
	}
}
