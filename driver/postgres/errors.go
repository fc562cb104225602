package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// stage is how far a failed call got, which decides what its failure means.
type stage int

const (
	// stageRead: the call writes nothing, whatever happened.
	stageRead stage = iota
	// stageTx: inside a transaction that has not begun to commit: a failure
	// leaves nothing written, since the server rolls back a transaction
	// whose connection drops.
	stageTx
	// stageWrite: an autocommit write, or a write in the caller's
	// transaction: a failure while it was in flight leaves its outcome
	// unknown.
	stageWrite
	// stageCommit: the COMMIT of the driver's own transaction (or the end of
	// an implicit one) was in flight.
	stageCommit
)

// staged carries the stage a failure happened at, for retry.
type staged struct {
	err   error
	stage stage
}

func (s *staged) Error() string { return s.err.Error() }
func (s *staged) Unwrap() error { return s.err }

// retryable reports failures after which running the driver's own statement
// or transaction again is safe (nothing was written) and may succeed.
// Lock timeouts are not retried: the wait was already bounded.
func retryable(err error, st stage) bool {
	if _, ok := driver.FromCaller(err); ok {
		return false
	}
	var conn *pgconn.ConnectError
	if errors.As(err, &conn) {
		return false // the server is down or refuses us: say so promptly
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01": // serialization_failure, deadlock_detected
			return true
		case shutdown(pe):
			// The server ended the session before running the statement;
			// during COMMIT it may have committed first.
			return st != stageCommit
		}
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	return (st == stageRead || st == stageTx) && connFailure(err)
}

// shutdown reports the server ending the session: administrator command
// (pg_terminate_backend), crash or shutdown, idle_session_timeout, or any
// connection exception.
func shutdown(pe *pgconn.PgError) bool {
	switch pe.Code {
	case "57P01", "57P02", "57P03", "57P05":
		return true
	}
	return strings.HasPrefix(pe.Code, "08")
}

// sentNothing reports a batch that failed before any of its statements was
// sent to run: while pgx prepared them (the session may have ended then) or
// encoded their arguments. Such a failure wrote nothing, whatever the stage
// of the call.
func sentNothing(err error) bool {
	var pe pgx.ErrPreprocessingBatch
	return errors.As(err, &pe)
}

// connFailure reports an error of the connection itself rather than of a
// statement.
func connFailure(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed) || pgconn.Timeout(err)
}

// Advice for failures whose default advice says too little.
const (
	adviceCancelled   = "the statement was cancelled (statement_timeout, or the call's context) before it completed; nothing was written"
	adviceCallerRetry = "this transaction was chosen as a deadlock victim or could not be serialized; roll it back and retry it whole, and produce late in it"
)

// wrap gives err the sentinel that says what it means (see the package doc,
// Errors), scrubbing passwords from its text.
func (d *Driver) wrap(ctx context.Context, err error, st stage) error {
	if err == nil {
		return nil
	}
	if s, ok := err.(*staged); ok {
		err, st = s.err, s.stage
	}
	if sentNothing(err) {
		st = stageRead
	}
	if err, ok := driver.Settled(err); ok {
		return err
	}
	if d.closed.Load() {
		return fmt.Errorf("postgres: %w (%s)", driver.ErrClosed, driver.Scrub(err.Error(), d.secrets...))
	}
	kind := func(k error, advice string) error {
		return driver.Wrap(k, fmt.Errorf("postgres: %w", err), advice, d.secrets...)
	}
	unknown := st == stageWrite || st == stageCommit
	var conn *pgconn.ConnectError
	if errors.As(err, &conn) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return d.bareCtx(ctx, err)
		}
		advice := ""
		var pe *pgconn.PgError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
			advice = "the server refused the credentials; check the user name and password in the connection URL"
		}
		return kind(driver.ErrUnavailable, advice)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01", pe.Code == "55P03":
			return kind(driver.ErrConflict, "")
		case shutdown(pe):
			if st == stageCommit && pe.Severity != "ERROR" {
				return kind(driver.ErrOutcomeUnknown, "")
			}
			return kind(driver.ErrUnavailable, "")
		case pe.Code == "57014":
			return kind(driver.ErrUnavailable, adviceCancelled)
		case pe.Code == "42P01" && strings.Contains(pe.Message, "message_log_"):
			return fmt.Errorf("postgres: %s (the stream's log is gone): %w", driver.Scrub(pe.Message, d.secrets...), driver.ErrStreamNotFound)
		}
		return kind(driver.ErrDatabase, "")
	}
	if ctx.Err() != nil {
		if !pgconn.SafeToRetry(err) && (unknown || (err != context.Canceled && err != context.DeadlineExceeded)) {
			return driver.Unanswered(fmt.Errorf("postgres: %w", err), unknown, true, d.secrets...)
		}
		// Nothing was sent (a bare context error comes from waiting for a
		// connection of the pool).
		return d.bareCtx(ctx, err)
	}
	switch {
	case pgconn.SafeToRetry(err):
		return kind(driver.ErrUnavailable, "")
	case unknown:
		// The statement or COMMIT was sent; what came back (if anything)
		// does not say whether it was applied.
		return kind(driver.ErrOutcomeUnknown, "")
	case connFailure(err):
		return kind(driver.ErrUnavailable, "")
	}
	return kind(driver.ErrDatabase, "")
}

// bareCtx returns the caller's context error for a call that sent nothing.
func (d *Driver) bareCtx(ctx context.Context, err error) error {
	return fmt.Errorf("postgres: %s: %w", driver.Scrub(err.Error(), d.secrets...), ctx.Err())
}

// conflictAdvice is the advice for a failed partition lock or a deadlock of
// an append.
func conflictAdvice(err error, parts []int32, callerTx bool) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch pe.Code {
	case "55P03":
		return driver.AppendLockAdvice(parts, callerTx)
	case "40001", "40P01":
		if callerTx {
			return adviceCallerRetry
		}
	}
	return ""
}

var kvPassword = regexp.MustCompile(`(?i)(?:^|\s)(?:ssl)?password\s*=\s*('((?:[^'\\]|\\.)*)'?|\S+)`)

// connSecrets finds the passwords in a PostgreSQL URL or key=value string,
// also when it is malformed, in every spelling an error may show: as
// written, and percent-decoded or unquoted.
func connSecrets(s string) []string {
	var out []string
	add := func(v string) {
		out = append(out, v)
		if dec, err := url.PathUnescape(v); err == nil {
			out = append(out, dec)
		}
		if dec, err := url.QueryUnescape(v); err == nil {
			out = append(out, dec)
		}
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok && (scheme == "postgres" || scheme == "postgresql") {
		// pgx's (and libpq's) reading: the user info ends at the first '@'
		// before any '/'; net/url's: at the last '@' of the authority.
		narrow := ""
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				add(pw)
				narrow = pw
			}
		}
		// Wider readings (the authority's, and a password with an unescaped
		// '/', '?' or '#'): pgx shows what follows its own, which it redacts.
		authority, _, _ := strings.Cut(rest, "/")
		for _, pw := range []string{driver.WidestPassword(authority), driver.WidestPassword(rest)} {
			add(pw)
			if tail, ok := strings.CutPrefix(pw, narrow); ok && narrow != "" && tail != "" {
				add(tail)
			}
		}
		add(driver.URLPassword(s))
		if _, query, ok := strings.Cut(rest, "?"); ok {
			for _, kv := range strings.Split(query, "&") {
				k, v, _ := strings.Cut(kv, "=")
				if dk, err := url.QueryUnescape(k); err == nil {
					k = dk
				}
				if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
					add(v)
				}
			}
		}
		return driver.Secrets(out...)
	}
	for _, m := range kvPassword.FindAllStringSubmatch(s, -1) {
		v := m[1]
		if strings.HasPrefix(v, "'") {
			add(strings.TrimPrefix(strings.TrimSuffix(v, "'"), "'"))
			unq := strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[2])
			add(unq)
			continue
		}
		add(v)
	}
	return driver.Secrets(out...)
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
