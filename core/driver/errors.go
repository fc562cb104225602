package driver

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Sentinel errors shared by all drivers. Package sqlstreams re-exports them.
var (
	ErrStreamNotFound = errors.New("stream not found")
	ErrStreamExists   = errors.New("stream already exists")
	ErrGroupNotFound  = errors.New("consumer group not found")
	ErrGroupVersion   = errors.New("consumer group is bound to another schema version")
	ErrLeaseLost      = errors.New("lease lost")
	ErrClosed         = errors.New("client is closed")
	ErrForeignTx      = errors.New("transaction belongs to another driver")
	// ErrGroupPaused: an operator paused the group; its claims lease
	// nothing until it is resumed.
	ErrGroupPaused = errors.New("consumer group is paused")

	// ErrUnavailable: the database could not be reached or did not answer in
	// time. Nothing was written.
	ErrUnavailable = errors.New("database unavailable")
	// ErrConflict: a lock another transaction holds was not granted in time,
	// or the engine chose this transaction as a deadlock victim. Nothing was
	// written by the driver's own transaction; a caller's transaction must
	// roll back.
	ErrConflict = errors.New("lock conflict")
	// ErrOutcomeUnknown: the connection failed or the context ended while the
	// database was committing, so the change may or may not have been applied.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrDatabase: the database refused a statement for another reason.
	ErrDatabase = errors.New("database error")
)

// Error is an engine failure with the sentinel that says what it means
// (Kind) and advice on what to do. Drivers wrap every engine error in one, so
// that no raw driver error reaches a user without a sentinel errors.Is can
// match; errors.As still finds the engine's own error inside.
type Error struct {
	Kind   error  // ErrUnavailable, ErrConflict, ErrOutcomeUnknown or ErrDatabase
	Advice string // what to do, in words; empty for the kind's default advice
	Err    error  // the engine's error; pass it through Redact when it may hold a password
}

// Wrap returns err as an *Error of kind, unless err is nil or already
// carries one of this package's sentinels (then it is returned unchanged).
// Secrets (passwords) are redacted from err first.
func Wrap(kind error, err error, advice string, secrets ...string) error {
	if err == nil || Classified(err) {
		return err
	}
	return &Error{Kind: kind, Advice: advice, Err: Redact(err, secrets...)}
}

// Redact returns err unchanged when its text shows none of the secrets as
// a credential, and otherwise an error with those credentials scrubbed from
// its text (see Scrub) that unwraps only to the context errors err matched:
// nothing reachable from it, through errors.Unwrap or errors.As, shows a
// secret. A password that is also a common word ("postgres") leaves the
// rest of the text, and so the engine's error inside, as it is.
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	scrubbed := Scrub(text, secrets...)
	if scrubbed == text {
		return err
	}
	r := &redacted{text: scrubbed}
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, c) {
			r.cause = c
		}
	}
	return r
}

type redacted struct {
	text  string
	cause error
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.cause }

var sentinels = []error{ErrStreamNotFound, ErrStreamExists, ErrGroupNotFound, ErrGroupVersion, ErrGroupPaused, ErrLeaseLost, ErrClosed,
	ErrForeignTx, ErrUnavailable, ErrConflict, ErrOutcomeUnknown, ErrDatabase, ErrFewerPartitions, ErrStreamChanged}

// Classified reports whether err matches one of this package's sentinels.
func Classified(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// CallerError carries an error that a callback of the caller returned (a
// RegisterGroupParams.Update, a registry decision) out of a driver's
// transaction: the driver rolls back and returns Err as it is, instead of
// classifying it as a database failure.
type CallerError struct{ Err error }

func (e CallerError) Error() string { return e.Err.Error() }
func (e CallerError) Unwrap() error { return e.Err }

// FromCaller returns the caller's own error that err carries, if any.
func FromCaller(err error) (error, bool) {
	var ce CallerError
	if errors.As(err, &ce) {
		return ce.Err, true
	}
	return err, false
}

// DefaultAdvice is the advice of each kind when a driver gives none.
func DefaultAdvice(kind error) string {
	switch kind {
	case ErrUnavailable:
		return "check that the database is running and reachable; nothing was written, so retrying once it is back is safe"
	case ErrConflict:
		return "another transaction holds a lock this one needs (a deadlock or a lock wait timeout); roll back and retry, and keep transactions that produce short"
	case ErrOutcomeUnknown:
		return "the change may or may not have been applied; check before retrying (for example by key), or make consumers idempotent"
	default:
		return "the database refused the statement; see the engine's message"
	}
}

func (e *Error) Error() string {
	advice := e.Advice
	if advice == "" {
		advice = DefaultAdvice(e.Kind)
	}
	msg := e.Kind.Error() + " (" + advice + ")"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the kind and the engine's error.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// Scrub replaces each non-empty secret (a password) in s where s shows it
// as a credential: in a URL's or a MySQL DSN's user information
// (user:secret@), and as the value of password, passwd or pwd
// (password=secret, password = 'secret', "password":"secret",
// password "secret"), as URLs' queries, key=value connection strings, JSON
// and servers' messages write it. The same word
// elsewhere (a user, host or database name, or a word of the message that
// happens to equal the password) stays, so that the text still says what
// failed.
func Scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		if !utf8.ValidString(sec) {
			// No pattern can hold it, and bytes that are not text are no
			// word of a message either: replace it wherever it stands.
			s = strings.ReplaceAll(s, sec, redactedText)
			continue
		}
		s = strings.ReplaceAll(s, ":"+sec+"@", ":"+redactedText+"@")
		s = regexp.MustCompile(`(?i)((?:pass(?:word|wd)?|pwd)["']?\s*[=:]?\s*["']?)`+regexp.QuoteMeta(sec)).ReplaceAllString(s, "${1}"+redactedText)
	}
	return s
}

// ScrubEverywhere replaces every occurrence of each non-empty secret in s:
// for text that quotes a connection string its parser could not read,
// where a piece of the password may stand anywhere.
func ScrubEverywhere(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, redactedText)
		}
	}
	return s
}

// redactedText stands in for a scrubbed secret.
const redactedText = "xxxxx"
