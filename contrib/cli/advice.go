package sqlstreamscli

import (
	"errors"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Core's errors say what to do in a Go program's words ("list them with
// DeadLetters", "apply them with Migrator.Migrate"). An operator at the
// command line needs the command instead: advise rewrites that advice, per
// sentinel, and leaves the rest of the message (and what errors.Is matches)
// as core wrote it. TestErrorAdvice goes over every sentinel the CLI can
// print.

// adviceRule replaces Go advice in the message of an error matching kind.
// In with, STREAM and GROUP stand for the names on the command line.
type adviceRule struct {
	kind error
	goes *regexp.Regexp
	with string
}

var adviceRules = []adviceRule{
	{sqlstreams.ErrStreamNotFound, regexp.MustCompile(`create it first or check the name`),
		"'sqlstreams streams list' lists the streams, 'sqlstreams streams create STREAM' makes one"},
	{sqlstreams.ErrStreamExists, regexp.MustCompile(`use Get to read its options, or pick another name`),
		"see it with 'sqlstreams streams describe STREAM', pick another name, or add --if-not-exists"},
	{sqlstreams.ErrDeadLetterNotFound, regexp.MustCompile(`list them with DeadLetters`),
		"list them with 'sqlstreams dead list STREAM GROUP'"},
	{sqlstreams.ErrSchemaOutdated, regexp.MustCompile(`apply them with Migrator\.Migrate.*$`),
		"apply them with 'sqlstreams migrate up' (or run without --no-migrate), or with your own tool from the SQL of 'sqlstreams migrate get'"},
	{sqlstreams.ErrRevisionNotFound, regexp.MustCompile(`list them with Revisions`),
		"'sqlstreams schema list STREAM' lists them"},
	{sqlstreams.ErrSchemaNotFound, regexp.MustCompile(`ids come from Revisions or a registration`),
		"'sqlstreams schema list STREAM' shows what is registered"},
	{sqlstreams.ErrReadOnly, regexp.MustCompile(`set the mode to READWRITE first`),
		"set it with 'sqlstreams schema mode set STREAM READWRITE' (or --global) first"},
	{sqlstreams.ErrInvalidMessage, regexp.MustCompile(`pass sqlstreams\.Key\(\.\.\.\)`), "pass --key (or --key-field)"},
	{sqlstreams.ErrInvalidMessage, regexp.MustCompile(`RawPayload\.Data`), "the payload"},
	{sqlstreams.ErrInvalidMessage, regexp.MustCompile(` \((MaxJSONDepth|MaxHeaderBytes)\)`), ""},
	{sqlstreams.ErrInvalidOption, regexp.MustCompile(`ResetShift\((-?\d+)\)`), "--shift-by $1"},
	{sqlstreams.ErrInvalidOption, regexp.MustCompile(`ResetToID\((-?\d+)\)`), "--to-id $1"},
	{sqlstreams.ErrInvalidOption, regexp.MustCompile(`DeadLetters limit`), "--limit"},
	{sqlstreams.ErrIncompatibleSchema, regexp.MustCompile(`give the type a new SchemaVersion\(\) \((\d+)\) and run a group per version`),
		"write the change as version $1 (a new SchemaVersion() in the Go type) with a group per version"},
	{sqlstreams.ErrUnavailable, regexp.MustCompile(`^(.*)$`), "$1 (the database is the one --url or $" + EnvURL + " names)"},
}

// goAPI matches the Go names core's advice may use, which a CLI error must
// not show (SchemaVersion() aside: it names what a developer changes).
var goAPI = regexp.MustCompile(`\b(Migrator|WithoutMigrate|DeadLetters|Revisions|RawPayload|ResetTo\w+|ResetShift|ResetOptions|Max[A-Z]\w+|Get|Register|Open|Stream\.\w+|sqlstreams\.[A-Z]\w*)\b`)

// advise rewrites the Go advice of err for the command line.
func advise(cmd *cobra.Command, args []string, err error) error {
	msg := err.Error()
	out := msg
	for _, r := range adviceRules {
		if errors.Is(err, r.kind) {
			out = r.goes.ReplaceAllString(out, names(cmd, args, r.with))
		}
	}
	if out == msg {
		return err
	}
	return &advised{err: err, msg: out}
}

// names puts the stream and group named on the command line into advice.
func names(cmd *cobra.Command, args []string, s string) string {
	for i, k := range argNames(cmd) {
		if i >= len(args) {
			break
		}
		switch k {
		case argStream:
			s = strings.ReplaceAll(s, "STREAM", args[i])
		case argGroup:
			s = strings.ReplaceAll(s, "GROUP", args[i])
		}
	}
	return s
}

// advised is err with its message rewritten for the command line.
type advised struct {
	err error
	msg string
}

func (a *advised) Error() string { return a.msg }
func (a *advised) Unwrap() error { return a.err }
