package sqlstreamscli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// backend makes an isolated database per test: a SQLite file, a PostgreSQL
// schema, a MariaDB database.
type backend struct {
	name   string
	newURL func(t *testing.T) string
}

var backends = []backend{
	{dsn.SQLite, func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "cli.db") }},
	{dsn.Postgres, func(t *testing.T) string { return postgrestest.NewSchema(t, nil) }},
	{dsn.MySQL, func(t *testing.T) string { return "mysql://" + mysqltest.NewDatabase(t) }},
}

// eachBackend runs fn on every backend, in parallel.
func eachBackend(t *testing.T, fn func(t *testing.T, url string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.newURL(t))
		})
	}
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cli runs the command in process on url, with no environment.
func cli(t *testing.T, url string, args ...string) result {
	t.Helper()
	return cliWith(t, &sqlstreamscli.Options{}, url, args...)
}

func cliWith(t *testing.T, o *sqlstreamscli.Options, url string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	o.Stdout, o.Stderr = &stdout, &stderr
	if o.Stdin == nil {
		o.Stdin = strings.NewReader("")
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if url != "" {
		args = append([]string{"--url", url}, args...)
	}
	code := sqlstreamscli.New(o).Execute(ctx, args)
	return result{stdout.String(), stderr.String(), code}
}

// must runs a command that has to succeed.
func must(t *testing.T, url string, args ...string) string {
	t.Helper()
	r := cli(t, url, args...)
	if r.code != 0 {
		t.Fatalf("sqlstreams %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// The message types a Go service would own.
type OrderV1 struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func (OrderV1) SchemaVersion() int { return 1 }

type OrderV2 struct {
	OrderID string `json:"order_id"`
	Amount  Money  `json:"amount"`
}

type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

func (OrderV2) SchemaVersion() int { return 2 }

// goClient opens a client as an application would, with a fixed identity
// so that lease holders are stable in goldens.
func goClient(t *testing.T, url string, opts ...sqlstreams.ClientOption) *sqlstreams.Client {
	t.Helper()
	drv, err := dsn.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := sqlstreams.Open(ctx, drv, append([]sqlstreams.ClientOption{sqlstreams.WithIdentity("worker-1"), sqlstreams.WithMaintenanceInterval(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// claimAll claims from c until it has n deliveries, within a bounded number
// of calls.
func claimAll[T sqlstreams.Versioned](t *testing.T, c *sqlstreams.Consumer[T], n int) []sqlstreams.Delivery[T] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []sqlstreams.Delivery[T]
	for range 50 {
		ds, err := c.Claim(ctx, n-len(out))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ds...)
		if len(out) == n {
			return out
		}
	}
	t.Fatalf("claimed %d of %d deliveries", len(out), n)
	return nil
}

// seed writes what the golden tests read: stream orders (2 partitions) with
// two v2 rows then three v1 rows (so that billing's cursors end at the
// high-water marks whatever the driver's claim scan passes over); group billing (v1) has one dead letter and
// one leased delivery held by worker-1; group audit (v2) has not read
// anything; stream accounts is compacted, with group snapshot (v1).
func seed(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// No heartbeat: its host and process would differ from run to run in
	// the goldens; TestMembers shows members.
	client := goClient(t, url, sqlstreams.WithHeartbeatInterval(0))
	orders := client.Stream[OrderV1]("orders")
	if _, err := orders.Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Stream[OrderV1]("accounts").Create(ctx, &sqlstreams.StreamOptions{Compacted: true,
		Retention: sqlstreams.Retention{MaxAge: 72 * time.Hour, MaxRows: 1000}}); err != nil {
		t.Fatal(err)
	}
	p2, err := client.Stream[OrderV2]("orders").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := p2.Produce(ctx, OrderV2{OrderID: fmt.Sprintf("B-%d", i+1), Amount: Money{Cents: int64(250 * (i + 1)), Currency: "EUR"}},
			sqlstreams.Key("acct-3")); err != nil {
			t.Fatal(err)
		}
	}
	p1, err := orders.Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"acct-1", "acct-2", "acct-1"} {
		if _, err := p1.Produce(ctx, OrderV1{OrderID: fmt.Sprintf("A-%d", i+1), Cents: int64(100 * (i + 1))}, sqlstreams.Key(key),
			sqlstreams.RoutingKey("eu.web"), sqlstreams.Header("trace_id", fmt.Sprintf("t-%d", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	billing, err := orders.Consumer("billing").Register(ctx, &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Stream[OrderV2]("orders").Consumer("audit").Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Stream[OrderV1]("accounts").Consumer("snapshot").Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ds := claimAll(t, billing, 3)
	for _, d := range ds {
		switch d.Value.OrderID {
		case "A-2":
			if err := d.Dead(ctx, errors.New("card declined: issuer said no\nat line 2")); err != nil {
				t.Fatal(err)
			}
		case "A-3": // stays leased
		default:
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var (
	tableTimeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	jsonTimeRE  = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)
)

// normalize replaces what changes from run to run, and only that: times
// (table times keep their width, so columns stay aligned) and the database
// URL.
func normalize(s, url string) string {
	s = strings.ReplaceAll(s, url, "<url>")
	s = jsonTimeRE.ReplaceAllString(s, `"<time>"`)
	return tableTimeRE.ReplaceAllString(s, "2000-01-01T00:00:00Z")
}

// golden compares got with testdata/golden/<dir>/<name>.golden, or writes
// it with -update.
func golden(t *testing.T, dir, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", dir, name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// eventually polls cond until it holds, within a bounded deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
