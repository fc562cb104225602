package sqlstreamscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	"github.com/sqlstreams/sqlstreams/contrib/jsonschema"
	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Exit codes Execute returns.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitCheckFailed = 3
)

var (
	// ErrUsage: the command line is wrong (a missing argument or flag, a
	// destructive command without --yes). Execute exits with ExitUsage.
	ErrUsage = errors.New("usage")
	// ErrCheckFailed: a check the command makes did not pass (an
	// incompatible schema, a version that is not retirable, pending
	// migrations). Execute exits with ExitCheckFailed.
	ErrCheckFailed = errors.New("check failed")
	// ErrNoURL: no database was named; pass --url or set SQLSTREAMS_URL.
	ErrNoURL = errors.New("no database URL")
)

// EnvURL is the environment variable read when --url is not given.
const EnvURL = "SQLSTREAMS_URL"

// Usagef returns an error matching ErrUsage, for commands added with
// AddCommand.
func Usagef(format string, args ...any) error {
	return &tagged{tag: ErrUsage, msg: fmt.Sprintf(format, args...)}
}

// CheckFailedf returns an error matching ErrCheckFailed, for commands added
// with AddCommand.
func CheckFailedf(format string, args ...any) error {
	return &tagged{tag: ErrCheckFailed, msg: fmt.Sprintf(format, args...)}
}

// tagged is an error with the CLI's message that matches tag (ErrUsage or
// ErrCheckFailed) and wraps the cause, if any.
type tagged struct {
	tag error
	msg string
	err error
}

func (e *tagged) Error() string        { return e.msg }
func (e *tagged) Is(target error) bool { return target == e.tag }
func (e *tagged) Unwrap() error        { return e.err }

// ExitCode maps an error to the exit code Execute returns for it.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrCheckFailed):
		return ExitCheckFailed
	}
	return ExitError
}

// Options configure New. Nil means the process's standard streams and
// environment.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (SQLSTREAMS_URL); default os.Getenv.
	Getenv func(string) string
	// Terminal reports whether w is an interactive terminal, where progress
	// bars are drawn; default: w is an *os.File on a character device.
	Terminal func(w io.Writer) bool
	// ClientOptions are passed to sqlstreams.Open after the CLI's own,
	// which enable the AVRO and PROTOBUF formats (contrib/avro,
	// contrib/protobuf) and JSON Schema validation (contrib/jsonschema): a
	// WithFormats here adds other types, giving AVRO or PROTOBUF again
	// fails Open with ErrInvalidOption, and a WithJSONValidation here
	// replaces the CLI's compiler.
	ClientOptions []sqlstreams.ClientOption
	// PollInterval is how often tail --follow reads the log; default 1s.
	PollInterval time.Duration
	// Version is what the version command prints; default the module
	// version from the build information.
	Version string
}

// CLI is one run of the sqlstreams command. Make it with New; Execute it
// once.
type CLI struct {
	opts Options
	root *cobra.Command

	url       string
	output    string
	timeout   time.Duration
	noMigrate bool
	verbose   bool

	drv    driver.Driver
	client *sqlstreams.Client
	log    *slog.Logger

	executed bool
}

// New builds the command tree.
func New(o *Options) *CLI {
	c := &CLI{}
	if o != nil {
		c.opts = *o
	}
	if c.opts.Stdin == nil {
		c.opts.Stdin = os.Stdin
	}
	if c.opts.Stdout == nil {
		c.opts.Stdout = os.Stdout
	}
	if c.opts.Stderr == nil {
		c.opts.Stderr = os.Stderr
	}
	if c.opts.Getenv == nil {
		c.opts.Getenv = os.Getenv
	}
	if c.opts.Terminal == nil {
		c.opts.Terminal = isTerminal
	}
	if c.opts.PollInterval <= 0 {
		c.opts.PollInterval = time.Second
	}
	root := &cobra.Command{
		Use:   "sqlstreams",
		Short: "Operate sqlstreams streams, groups, dead letters, schemas and migrations by name",
		Long: `sqlstreams operates the streams of a sqlstreams database by name.

The database comes from --url or ` + EnvURL + `; the scheme picks the driver:
  postgres://user:pass@host:5432/db        mysql://user:pass@tcp(host:3306)/db
  sqlite:path.db  sqlite:///abs/path.db    mysql://user:pass@host:3306/db

Exit codes: 0 ok, 1 error, 2 usage, 3 check failed (CI gates).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          subcommandArgs,
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SetIn(c.opts.Stdin)
	root.SetOut(c.opts.Stdout)
	root.SetErr(c.opts.Stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return Usagef("%v", err) })
	root.CompletionOptions.HiddenDefaultCmd = false
	pf := root.PersistentFlags()
	pf.StringVar(&c.url, "url", "", "database URL (default $"+EnvURL+")")
	pf.StringVarP(&c.output, "output", "o", "table", "output format: table, json (one document) or jsonl (one object per line)")
	pf.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on each command (tail --follow: on each read)")
	pf.BoolVar(&c.noMigrate, "no-migrate", false, "fail on a database that is not migrated instead of migrating it")
	pf.BoolVarP(&c.verbose, "verbose", "v", false, "log the library's debug messages on stderr")
	c.root = root
	root.AddCommand(c.streamsCmd(), c.healthCmd(), c.groupsCmd(), c.deadCmd(), c.tailCmd(), c.produceCmd(),
		c.schemaCmd(), c.migrateCmd(), c.maintainCmd(), c.consoleCmd(), c.registryCmd(), c.versionCmd())
	root.InitDefaultCompletionCmd()
	return c
}

// Root returns the root command, to adjust help or flags.
func (c *CLI) Root() *cobra.Command { return c.root }

// AddCommand adds commands to the root, next to the built-in ones (the web
// console registers itself this way). Their RunE may call Client, Output
// and JSON, and return errors made with Usagef or CheckFailedf for exit
// codes 2 and 3.
func (c *CLI) AddCommand(cmds ...*cobra.Command) { c.root.AddCommand(cmds...) }

// Stdout returns where commands write their results.
func (c *CLI) Stdout() io.Writer { return c.opts.Stdout }

// Output returns the output format chosen with -o: table, json or jsonl.
func (c *CLI) Output() string { return c.output }

// Execute runs the command line args (without the program name) and returns
// the exit code. Errors are printed on stderr. The client, when a command
// opened one, is closed before Execute returns.
func (c *CLI) Execute(ctx context.Context, args []string) int {
	if c.executed {
		fmt.Fprintln(c.opts.Stderr, "sqlstreams: this CLI has run already; make a new one with New for each command line")
		return ExitError
	}
	c.executed = true
	ran := false
	c.addCompletion(c.root)
	wrap(c.root, &ran)
	c.root.SetArgs(args)
	err := c.root.ExecuteContext(ctx)
	if cerr := c.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		return ExitOK
	}
	if !ran && !errors.Is(err, ErrCheckFailed) {
		err = &tagged{tag: ErrUsage, msg: err.Error(), err: err}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "sqlstreams") {
		msg = "sqlstreams: " + msg
	}
	if errors.Is(err, ErrUsage) {
		msg += "\nRun 'sqlstreams --help' (or the command with --help) for usage."
	}
	fmt.Fprintln(c.opts.Stderr, msg)
	return ExitCode(err)
}

// wrap marks, for every command with a RunE, that it ran: an error before
// that is the command line's (cobra's argument and flag checks).
func wrap(cmd *cobra.Command, ran *bool) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			*ran = true
			return run(cmd, args)
		}
	} else if run := cmd.Run; run != nil {
		cmd.Run = func(cmd *cobra.Command, args []string) {
			*ran = true
			run(cmd, args)
		}
	}
	for _, sub := range cmd.Commands() {
		wrap(sub, ran)
	}
}

func (c *CLI) close() error {
	var err error
	if c.client != nil {
		err = c.client.Close()
		c.client = nil
	}
	if c.drv != nil {
		if e := c.drv.Close(); err == nil {
			err = e
		}
		c.drv = nil
	}
	return err
}

func (c *CLI) databaseURL() (string, error) {
	u := c.url
	if u == "" {
		u = c.opts.Getenv(EnvURL)
	}
	if u == "" {
		return "", &tagged{tag: ErrUsage, err: ErrNoURL,
			msg: fmt.Sprintf("sqlstreams: %v: pass --url or set %s (postgres://…, mysql://…, sqlite:path.db)", ErrNoURL, EnvURL)}
	}
	return u, nil
}

// Driver returns the driver --url names, without opening a client (so
// nothing is migrated). The CLI closes it.
func (c *CLI) Driver() (driver.Driver, error) {
	if c.drv != nil {
		return c.drv, nil
	}
	u, err := c.databaseURL()
	if err != nil {
		return nil, err
	}
	drv, err := dsn.Open(u)
	if err != nil {
		return nil, &tagged{tag: ErrUsage, msg: "sqlstreams: --url: " + err.Error(), err: err}
	}
	c.drv = drv
	return drv, nil
}

// Client opens (once) the client on the database --url names: migrated
// unless --no-migrate, logging on stderr, with every schema type the CLI
// reads (formats) enabled and JSON Schema messages validated, so that registering, checking and serving a
// document never depends on which command opened the client. The CLI
// closes it.
func (c *CLI) Client(ctx context.Context) (*sqlstreams.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	drv, err := c.Driver()
	if err != nil {
		return nil, err
	}
	opts := []sqlstreams.ClientOption{sqlstreams.WithLogger(c.logger()), sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithFormats(formats()...),
		sqlstreams.WithJSONValidation(jsonschema.Compiler())}
	if c.noMigrate {
		opts = append(opts, sqlstreams.WithoutMigrate())
	}
	start := time.Now()
	client, err := sqlstreams.Open(ctx, drv, append(opts, c.opts.ClientOptions...)...)
	c.drv = nil // Open closes the driver when it fails; the client closes it otherwise
	c.logger().Debug("sqlstreams: open client", "driver", drv.Name(), "migrate", !c.noMigrate, "took", time.Since(start), "error", err)
	if err != nil {
		return nil, err
	}
	c.client = client
	return client, nil
}

// formats are the schema languages the CLI enables beside JSON Schema, which
// is built in: AVRO and PROTOBUF, as contrib/ccompat enables them, so that
// the CLI and the registry API it serves accept the same documents.
func formats() []schema.Format { return []schema.Format{avro.Format(), protobuf.Format()} }

// run adapts a command body: it checks the output format and bounds the
// command by --timeout.
func (c *CLI) run(body func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		switch c.output {
		case "table", "json", "jsonl":
		default:
			return Usagef("-o %q; use table, json or jsonl", c.output)
		}
		ctx := cmd.Context()
		if f := cmd.Flags().Lookup("follow"); f == nil || f.Value.String() != "true" {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		start := time.Now()
		err := body(ctx, cmd, args)
		if err != nil {
			err = c.didYouMean(ctx, cmd, args, advise(cmd, args, err))
		}
		c.logger().Debug("sqlstreams: command done", "command", cmd.CommandPath(), "took", time.Since(start), "error", err)
		if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("%w (the command ran longer than --timeout %v; raise --timeout)", err, c.timeout)
		}
		return err
	}
}

// logger logs on stderr: errors only, everything with --verbose.
func (c *CLI) logger() *slog.Logger {
	if c.log == nil {
		level := slog.LevelError
		if c.verbose {
			level = slog.LevelDebug
		}
		c.log = slog.New(slog.NewTextHandler(c.opts.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return c.log
}

// JSON reports whether the output is json or jsonl.
func (c *CLI) JSON() bool { return c.output != "table" }

// WriteJSON writes v as the command's document: indented for json, one line
// for jsonl.
func (c *CLI) WriteJSON(v any) error {
	enc := json.NewEncoder(c.opts.Stdout)
	enc.SetEscapeHTML(false)
	if c.output == "json" {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

func (c *CLI) table() *tabwriter.Writer {
	return tabwriter.NewWriter(c.opts.Stdout, 0, 0, 2, ' ', 0)
}

func (c *CLI) note(format string, args ...any) {
	fmt.Fprintf(c.opts.Stderr, format+"\n", args...)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// parseVersion reads a schema version written 2 or v2.
func parseVersion(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "v"))
	if err != nil || n < 1 || n > sqlstreams.MaxSchemaVersion {
		return 0, Usagef("version %q: write a schema version as 2 or v2 (1 to %d)", s, sqlstreams.MaxSchemaVersion)
	}
	return n, nil
}

func parseID(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, Usagef("id %q: ids are positive integers", s)
	}
	return n, nil
}

// Times are printed in UTC, to the second in tables (fixed width) and to
// the nanosecond in JSON.
func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cut shortens s to n runes on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// versions reads the command's module version and the core module's from
// the build information ("(devel)" in a workspace build).
func versions() (cli, core string) {
	cli, core = "(devel)", "(devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return cli, core
	}
	if bi.Main.Version != "" {
		cli = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/sqlstreams/sqlstreams/core" && d.Version != "" {
			core = d.Version
		}
	}
	return cli, core
}
