package sqlstreamscli_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestErrorAdvice: every sentinel the CLI can print, raised by a real
// command where one raises it, gives advice in commands (sqlstreams …),
// never in Go method names, and still exits as before.
func TestErrorAdvice(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	seed(t, url)
	must(t, url, "schema", "mode", "set", "accounts", "READONLY")
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	fresh := "sqlite:" + filepath.Join(t.TempDir(), "fresh.db")
	for _, c := range []struct {
		sentinel error
		url      string
		args     []string
		code     int
		want     string
	}{
		{sqlstreams.ErrStreamNotFound, url, []string{"health", "nope"}, 1, "'sqlstreams streams list' lists the streams, 'sqlstreams streams create nope' makes one"},
		{sqlstreams.ErrStreamExists, url, []string{"streams", "create", "orders"}, 1, "see it with 'sqlstreams streams describe orders'"},
		{sqlstreams.ErrGroupNotFound, url, []string{"groups", "describe", "orders", "nope"}, 1, "it has audit, billing"},
		{sqlstreams.ErrDeadLetterNotFound, url, []string{"dead", "show", "orders", "billing", "1"}, 1, "list them with 'sqlstreams dead list orders billing'"},
		{sqlstreams.ErrSchemaOutdated, fresh, []string{"--no-migrate", "streams", "list"}, 1, "apply them with 'sqlstreams migrate up'"},
		{sqlstreams.ErrReadOnly, url, []string{"schema", "level", "set", "accounts", "FULL"}, 1, "'sqlstreams schema mode set accounts READWRITE'"},
		{sqlstreams.ErrInvalidMessage, url, []string{"produce", "accounts", "--version", "1", "--data", "{}"}, 1, "pass --key (or --key-field)"},
		{sqlstreams.ErrInvalidMessage, url, []string{"produce", "orders", "--version", "1", "--data", deep}, 1, "the limit is 1000"},
		{sqlstreams.ErrInvalidOption, url, []string{"groups", "reset", "orders", "billing", "--shift-by", "2000000"}, 1, "--shift-by 2000000"},
		{sqlstreams.ErrInvalidName, url, []string{"streams", "create", "bad name"}, 1, "use a name matching"},
		{sqlstreams.ErrGroupVersion, url, []string{"groups", "create", "orders", "billing", "--version", "2"}, 1, "('sqlstreams groups delete orders billing')"},
	} {
		r := cli(t, c.url, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v (%v): want exit %d and %q in:\n%v", c.args, c.sentinel, c.code, c.want, r)
		}
		if m := sqlstreamscli.GoAPI.FindString(r.stderr); m != "" {
			t.Errorf("%v: the error names the Go API (%s):\n%s", c.args, m, r.stderr)
		}
	}

	// The sentinels no command here can raise on demand, made as core and
	// the drivers make them.
	for _, err := range []error{
		driver.Wrap(sqlstreams.ErrUnavailable, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), ""),
		driver.Wrap(sqlstreams.ErrConflict, errors.New("deadlock detected"), ""),
		driver.Wrap(sqlstreams.ErrOutcomeUnknown, errors.New("unexpected EOF"), ""),
		driver.Wrap(sqlstreams.ErrDatabase, errors.New("permission denied for table stream_config"), ""),
		&sqlstreams.SettleError{Op: "ack", Stream: "s", Group: "g", Lost: []int64{1}, AlreadySettled: []int64{2}},
		fmt.Errorf("sqlstreams: %w; open a new client", sqlstreams.ErrClosed),
		fmt.Errorf("sqlstreams: sqlite: %w", sqlstreams.ErrNoRegistry),
		fmt.Errorf("sqlstreams: schema id %d: %w; ids come from Revisions or a registration", 7, sqlstreams.ErrSchemaNotFound),
		fmt.Errorf("sqlstreams: stream %q version %d: %w: revision %d; list them with Revisions", "s", 1, sqlstreams.ErrRevisionNotFound, 9),
		fmt.Errorf("%w: ResetToID(%d); ids start at 1", sqlstreams.ErrInvalidOption, 0),
		fmt.Errorf("%w: DeadLetters limit %d; use a positive count", sqlstreams.ErrInvalidOption, 0),
		fmt.Errorf("%w: RawPayload.Data is not valid JSON", sqlstreams.ErrInvalidMessage),
		fmt.Errorf("%w: headers take %d bytes; the limit is %d (MaxHeaderBytes)", sqlstreams.ErrInvalidMessage, 70000, sqlstreams.MaxHeaderBytes),
		&sqlstreams.SchemaOutdatedError{Driver: "postgres", Pending: []int{9, 10}},
		&sqlstreams.IncompatibleSchemaError{Stream: "s", Type: "main.OrderV1", Version: 1},
	} {
		got := sqlstreamscli.Advise(err, "s", "g")
		if m := sqlstreamscli.GoAPI.FindString(got.Error()); m != "" {
			t.Errorf("%v: the error names the Go API (%s):\n%s", err, m, got)
		}
		if sqlstreamscli.ExitCode(got) != sqlstreamscli.ExitCode(err) {
			t.Errorf("%v: the advised error matches less than the original", err)
		}
		for _, s := range []error{sqlstreams.ErrUnavailable, sqlstreams.ErrLeaseLost, sqlstreams.ErrSchemaOutdated, sqlstreams.ErrInvalidOption} {
			if errors.Is(err, s) != errors.Is(got, s) {
				t.Errorf("%v: errors.Is(%v) changed", err, s)
			}
		}
	}
}
