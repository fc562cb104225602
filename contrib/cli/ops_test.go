package sqlstreamscli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in:\n%s", err, s)
	}
	return v
}

type healthDoc struct {
	Versions []struct {
		Version   int  `json:"version"`
		Retirable bool `json:"retirable"`
		Groups    []struct {
			Group  string `json:"group"`
			Unread int64  `json:"unread"`
			Dead   int64  `json:"dead"`
		} `json:"groups"`
	} `json:"versions"`
}

func compact(t *testing.T, raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func groupFigures(t *testing.T, url, stream, group string, version int) (unread, dead int64) {
	t.Helper()
	h := decode[healthDoc](t, must(t, url, "-o", "json", "health", stream))
	for _, v := range h.Versions {
		for _, g := range v.Groups {
			if v.Version == version && g.Group == group {
				return g.Unread, g.Dead
			}
		}
	}
	t.Fatalf("no group %s at v%d in the health read", group, version)
	return 0, 0
}

// TestScenario drives a retirement with the CLI alone, against data a Go
// service wrote and handles: health shows the unread rows, a poison row goes
// dead, dead list shows it, dead replay sends it back and it is handled, and
// groups delete is refused until health --retirable v1 exits 0.
func TestScenario(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		client := goClient(t, url)
		stream := client.Stream[OrderV1]("payments")
		producer, err := stream.Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		consumer, err := stream.Consumer("ledger").Register(ctx, &sqlstreams.ConsumerOptions{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if _, err := producer.Produce(ctx, OrderV1{OrderID: fmt.Sprintf("P-%d", i), Cents: int64(i * 100)}); err != nil {
				t.Fatal(err)
			}
		}
		// 1. health shows the unread rows.
		if unread, _ := groupFigures(t, url, "payments", "ledger", 1); unread != 3 {
			t.Fatalf("health shows %d unread for ledger, want 3", unread)
		}
		// 2. The handler buries P-2 until it is fixed.
		var fixed atomic.Bool
		var handled sync.Map
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
				if d.Value.OrderID == "P-2" && !fixed.Load() {
					return sqlstreams.Dead(errors.New("ledger account locked for P-2"))
				}
				handled.Store(d.Value.OrderID, true)
				return nil
			})
		}()
		defer func() {
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
		}()
		eventually(t, "the poison row is dead and the rest handled", func() bool {
			unread, dead := groupFigures(t, url, "payments", "ledger", 1)
			return unread == 0 && dead == 1
		})
		// 3. dead list shows it with the error.
		list := decode[struct {
			DeadLetters []struct {
				ID      int64           `json:"id"`
				Error   string          `json:"error"`
				Payload json.RawMessage `json:"payload"`
			} `json:"dead_letters"`
		}](t, must(t, url, "-o", "json", "dead", "list", "payments", "ledger"))
		if len(list.DeadLetters) != 1 || !strings.Contains(list.DeadLetters[0].Error, "ledger account locked for P-2") ||
			!strings.Contains(string(list.DeadLetters[0].Payload), `"P-2"`) {
			t.Fatalf("dead list: %+v", list)
		}
		table := must(t, url, "dead", "list", "payments", "ledger")
		if !strings.Contains(table, "ledger account locked for P-2") {
			t.Fatalf("dead list table lacks the error:\n%s", table)
		}
		// 4. Not retirable: the gate fails and delete is refused.
		if r := cli(t, url, "health", "payments", "--retirable", "v1"); r.code != 3 || !strings.Contains(r.stdout, "group ledger has 1 dead") {
			t.Fatalf("health --retirable v1 before the replay: %v", r)
		}
		if r := cli(t, url, "groups", "delete", "payments", "ledger", "--yes"); r.code != 3 || !strings.Contains(r.stderr, "not retirable") {
			t.Fatalf("groups delete before the replay: %v", r)
		}
		must(t, url, "groups", "describe", "payments", "ledger") // still there
		// 5. Replay it, fixed: it is handled.
		fixed.Store(true)
		id := fmt.Sprint(list.DeadLetters[0].ID)
		if out := must(t, url, "dead", "replay", "payments", "ledger", id); !strings.Contains(out, "REPLAYED\n1\n") {
			t.Fatalf("dead replay: %s", out)
		}
		eventually(t, "the replayed row is handled", func() bool {
			_, ok := handled.Load("P-2")
			return ok
		})
		eventually(t, "health --retirable v1 exits 0", func() bool { return cli(t, url, "health", "payments", "--retirable", "v1").code == 0 })
		// 6. Now the group may go.
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		done <- nil
		if out := must(t, url, "groups", "delete", "payments", "ledger", "--yes"); !strings.Contains(out, "deleted group ledger of payments") {
			t.Fatalf("groups delete: %s", out)
		}
		if out := must(t, url, "groups", "list", "payments"); strings.Contains(out, "ledger") {
			t.Fatalf("ledger still listed:\n%s", out)
		}
	})
}

// TestTailFollow: tail --follow prints rows produced after it started and
// returns 0 when its context ends (what SIGINT does in the binary).
func TestTailFollow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client := goClient(t, url)
		producer, err := client.Stream[OrderV1]("events").Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := producer.Produce(ctx, OrderV1{OrderID: "before"}); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr syncBuffer
		followCtx, stopFollow := context.WithCancel(ctx)
		code := make(chan int, 1)
		go func() {
			c := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: &stdout, Stderr: &stderr, PollInterval: 10 * time.Millisecond,
				Getenv: func(string) string { return "" }})
			code <- c.Execute(followCtx, []string{"--url", url, "-o", "jsonl", "tail", "events", "--follow"})
		}()
		eventually(t, "the first row is printed", func() bool { return strings.Contains(stdout.String(), `"before"`) })
		for _, id := range []string{"after-1", "after-2"} {
			if _, err := producer.Produce(ctx, OrderV1{OrderID: id}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "rows produced later are printed", func() bool { return strings.Contains(stdout.String(), `"after-2"`) })
		stopFollow()
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("tail --follow exited %d after its context ended: %s", c, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("tail --follow did not stop within 30s of its context ending")
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 3 {
			t.Fatalf("want 3 jsonl lines, got:\n%s", stdout.String())
		}
		for i, l := range lines {
			rec := decode[struct {
				ID int64 `json:"id"`
			}](t, l)
			if rec.ID != int64(i+1) {
				t.Fatalf("line %d has id %d", i, rec.ID)
			}
		}
	})
}

// TestGroupsReset: without --execute nothing moves (groups describe shows
// the same cursors); with it the cursors move as planned.
func TestGroupsReset(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		seed(t, url)
		type desc struct {
			Partitions []struct {
				Partition int   `json:"partition"`
				NextID    int64 `json:"next_id"`
			} `json:"partitions"`
		}
		before := must(t, url, "-o", "json", "groups", "describe", "orders", "billing")
		plan := decode[struct {
			Executed bool `json:"executed"`
			Changes  []struct {
				Partition int   `json:"partition"`
				NewNextID int64 `json:"new_next_id"`
			} `json:"changes"`
		}](t, must(t, url, "-o", "json", "groups", "reset", "orders", "billing", "--to-earliest"))
		if plan.Executed || len(plan.Changes) != 2 || plan.Changes[0].NewNextID != 1 {
			t.Fatalf("plan: %+v", plan)
		}
		if after := must(t, url, "-o", "json", "groups", "describe", "orders", "billing"); normalize(after, url) != normalize(before, url) {
			t.Fatalf("a dry run changed the group:\n%s\n%s", before, after)
		}
		must(t, url, "groups", "reset", "orders", "billing", "--to-earliest", "--partition", "1", "--execute")
		d := decode[desc](t, must(t, url, "-o", "json", "groups", "describe", "orders", "billing"))
		if d.Partitions[0].NextID != 6 || d.Partitions[1].NextID != 4 { // partition 1 holds row 4 alone
			t.Fatalf("after --execute on partition 1: %+v", d)
		}
		must(t, url, "groups", "reset", "orders", "billing", "--shift-by", "1", "--partition", "1", "--execute")
		d = decode[desc](t, must(t, url, "-o", "json", "groups", "describe", "orders", "billing"))
		if d.Partitions[0].NextID != 6 || d.Partitions[1].NextID != 5 {
			t.Fatalf("after --shift-by 1: %+v", d)
		}
		if r := cli(t, url, "groups", "reset", "orders", "billing", "--to-time", "yesterday"); r.code != 2 {
			t.Fatalf("a bad --to-time: %v", r)
		}
	})
}

// TestProduce: --data and stdin, key, routing key and headers reach the
// row; bad JSON and an unknown stream are refused with the library's
// message.
func TestProduce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		must(t, url, "streams", "create", "raw", "--partitions", "3")
		out := must(t, url, "-o", "json", "produce", "raw", "--version", "v2", "--key", "k1", "--routing-key", "eu.web",
			"--header", "trace_id=abc", "--header", "source=cli", "--data", `{"a": 1}`)
		if id := decode[struct {
			ID int64 `json:"id"`
		}](t, out).ID; id != 1 {
			t.Fatalf("produce: %s", out)
		}
		r := cliWith(t, &sqlstreamscli.Options{Stdin: strings.NewReader("\n{\"b\": 2}\n")}, url, "produce", "raw", "--version", "3")
		if r.code != 0 || r.stdout != "PRODUCED  FIRST-ID  LAST-ID\n1         2         2\n" || r.stderr != "" {
			t.Fatalf("produce from stdin: %v", r)
		}
		recs := decode[struct {
			Records []struct {
				ID            int64             `json:"id"`
				SchemaVersion int               `json:"schema_version"`
				Key           *string           `json:"key"`
				RoutingKey    string            `json:"routing_key"`
				Headers       map[string]string `json:"headers"`
				Payload       json.RawMessage   `json:"payload"`
			} `json:"records"`
		}](t, must(t, url, "-o", "json", "tail", "raw"))
		if len(recs.Records) != 2 {
			t.Fatalf("tail: %+v", recs)
		}
		first, second := recs.Records[0], recs.Records[1]
		if first.SchemaVersion != 2 || first.Key == nil || *first.Key != "k1" || first.RoutingKey != "eu.web" ||
			first.Headers["trace_id"] != "abc" || first.Headers["source"] != "cli" || compact(t, first.Payload) != `{"a":1}` {
			t.Fatalf("first row: %+v", first)
		}
		if second.SchemaVersion != 3 || second.Key != nil || !strings.Contains(string(second.Payload), `"b"`) {
			t.Fatalf("second row: %+v", second)
		}
		for _, last := range []struct {
			args []string
			ids  []int64
		}{{[]string{"--last", "1"}, []int64{2}}, {[]string{"--last", "2"}, []int64{1, 2}}, {[]string{"--last", "2", "--limit", "1"}, []int64{1}},
			{[]string{"--after", "1"}, []int64{2}}, {[]string{"--key", "k1"}, []int64{1}}, {[]string{"--version", "3", "--version", "v2"}, []int64{1, 2}},
			{[]string{"--version", "1"}, nil}} {
			page := decode[struct {
				Records []struct {
					ID int64 `json:"id"`
				} `json:"records"`
			}](t, must(t, url, append([]string{"-o", "json", "tail", "raw"}, last.args...)...))
			var ids []int64
			for _, r := range page.Records {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, last.ids) {
				t.Fatalf("tail raw %v: ids %v, want %v", last.args, ids, last.ids)
			}
		}
		if r := cli(t, url, "produce", "raw", "--version", "1", "--data", "{not json"); r.code != 1 || !strings.Contains(r.stderr, "invalid message") {
			t.Fatalf("bad JSON: %v", r)
		}
		if r := cli(t, url, "produce", "nope", "--version", "1", "--data", "{}"); r.code != 1 || !strings.Contains(r.stderr, "stream not found") {
			t.Fatalf("unknown stream: %v", r)
		}
		if strings.Contains(must(t, url, "streams", "list"), "nope") {
			t.Fatal("produce created a stream")
		}
		if r := cli(t, url, "produce", "raw", "--data", "{}"); r.code != 2 {
			t.Fatalf("produce without --version: %v", r)
		}
		if r := cli(t, url, "produce", "raw", "--version", "1", "--header", "novalue", "--data", "{}"); r.code != 2 {
			t.Fatalf("a header without =: %v", r)
		}
	})
}

// TestStreamsAdmin: create, rename, destroy (only with --yes).
func TestStreamsAdmin(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		out := must(t, url, "-o", "json", "streams", "create", "orders", "--partitions", "4", "--compacted", "--max-age", "36h", "--max-rows", "500", "--hard")
		s := decode[struct {
			Streams []struct {
				Name       string  `json:"name"`
				Partitions int     `json:"partitions"`
				Compacted  bool    `json:"compacted"`
				MaxAgeSecs float64 `json:"max_age_seconds"`
				MaxRows    int64   `json:"max_rows"`
				Hard       bool    `json:"hard"`
			} `json:"streams"`
		}](t, out).Streams
		if len(s) != 1 || s[0].Name != "orders" || s[0].Partitions != 4 || !s[0].Compacted ||
			s[0].MaxAgeSecs != 36*3600 || s[0].MaxRows != 500 || !s[0].Hard {
			t.Fatalf("created: %s", out)
		}
		if r := cli(t, url, "streams", "create", "orders"); r.code != 1 || !strings.Contains(r.stderr, "exists") {
			t.Fatalf("create twice: %v", r)
		}
		must(t, url, "streams", "rename", "orders", "orders.v2")
		if out := must(t, url, "streams", "list"); !strings.Contains(out, "orders.v2") {
			t.Fatalf("after rename:\n%s", out)
		}
		if r := cli(t, url, "streams", "destroy", "orders.v2"); r.code != 2 {
			t.Fatalf("destroy without --yes: %v", r)
		}
		must(t, url, "streams", "describe", "orders.v2")
		must(t, url, "streams", "destroy", "orders.v2", "--yes")
		if r := cli(t, url, "streams", "describe", "orders.v2"); r.code != 1 || !strings.Contains(r.stderr, "stream not found") {
			t.Fatalf("describe after destroy: %v", r)
		}
		if r := cli(t, url, "streams", "create", "bad name"); r.code != 1 || !strings.Contains(r.stderr, "invalid name") {
			t.Fatalf("a bad name: %v", r)
		}
	})
}

// TestSettings: level and mode get/set/clear per stream and registry-wide,
// with the source of the effective value.
func TestSettings(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		must(t, url, "streams", "create", "orders")
		type setting struct {
			Scope   string `json:"scope"`
			Level   string `json:"level"`
			Mode    string `json:"mode"`
			Source  string `json:"source"`
			Version int    `json:"version"`
		}
		get := func(args ...string) setting {
			return decode[setting](t, must(t, url, append([]string{"-o", "json", "schema"}, args...)...))
		}
		if s := get("level", "get", "orders"); s.Level != "BACKWARD" || s.Source != "default" || s.Scope != "orders" {
			t.Fatalf("default level: %+v", s)
		}
		if s := get("level", "set", "--global", "full"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("set global: %+v", s)
		}
		if s := get("level", "get", "orders"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("stream level after a global set: %+v", s)
		}
		if s := get("level", "set", "orders", "NONE"); s.Level != "NONE" || s.Source != "stream" {
			t.Fatalf("set stream: %+v", s)
		}
		if s := get("level", "clear", "orders"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("clear stream: %+v", s)
		}
		// A version's own level and mode: set before its first revision,
		// only on it, and cleared back to the stream's (else registry-wide).
		if s := get("level", "set", "orders", "--version", "2", "NONE"); s.Level != "NONE" || s.Source != "version" || s.Version != 2 || s.Scope != "orders" {
			t.Fatalf("set version 2: %+v", s)
		}
		if s := get("level", "get", "orders", "--version", "1"); s.Level != "FULL" || s.Source != "registry" || s.Version != 1 {
			t.Fatalf("version 1 next to version 2's own level: %+v", s)
		}
		if s := get("level", "get", "orders"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("the stream's level next to version 2's own: %+v", s)
		}
		if s := get("level", "clear", "orders", "--version", "2"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("clear version 2: %+v", s)
		}
		if s := get("mode", "set", "orders", "--version", "2", "import"); s.Mode != "IMPORT" || s.Source != "version" {
			t.Fatalf("set version 2's mode: %+v", s)
		}
		if s := get("mode", "clear", "orders", "--version", "2"); s.Mode != "READWRITE" || s.Source != "default" {
			t.Fatalf("clear version 2's mode: %+v", s)
		}
		if out := must(t, url, "schema", "level", "get", "orders", "--version", "3"); out != "SCOPE             LEVEL  SOURCE\norders version 3  FULL   registry\n" {
			t.Fatalf("level get --version table:\n%q", out)
		}
		if s := get("mode", "set", "orders", "readonly"); s.Mode != "READONLY" || s.Source != "stream" {
			t.Fatalf("set mode: %+v", s)
		}
		// READONLY refuses config changes: the command fails and nothing changes.
		if r := cli(t, url, "schema", "level", "set", "orders", "NONE"); r.code == 0 {
			t.Fatalf("level set on a READONLY stream succeeded: %v", r)
		}
		if s := get("level", "get", "orders"); s.Level != "FULL" || s.Source != "registry" {
			t.Fatalf("level after a refused set: %+v", s)
		}
		if out := must(t, url, "schema", "mode", "get", "--global"); out != "SCOPE            MODE       SOURCE\n(registry-wide)  READWRITE  default\n" {
			t.Fatalf("mode get --global table:\n%q", out)
		}
		for _, args := range [][]string{{"schema", "level", "set", "orders", "SIDEWAYS"}, {"schema", "level", "get"},
			{"schema", "level", "get", "orders", "--global"}, {"schema", "mode", "set", "--global", "WRITEONLY"},
			{"schema", "level", "get", "--global", "--version", "1"}, {"schema", "level", "get", "orders", "--version", "-1"}} {
			if r := cli(t, url, args...); r.code != 2 {
				t.Fatalf("%v: %v", args, r)
			}
		}
	})
}

// TestMigrate: get writes the embedded files byte for byte with no
// database; validate exits 3 on an empty database and --no-migrate refuses
// it; up applies, after which both pass.
func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, name := range dsn.Names() {
		t.Run("get-"+name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			must(t, "", "migrate", "get", "--all", "--driver", name, "--dir", dir, "--no-records")
			src := filepath.Join("..", "..", "driver", name, "migrations")
			want, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("wrote %d files, the driver embeds %d", len(got), len(want))
			}
			for _, f := range want {
				a, _ := os.ReadFile(filepath.Join(src, f.Name()))
				b, err := os.ReadFile(filepath.Join(dir, f.Name()))
				if err != nil || !bytes.Equal(a, b) {
					t.Fatalf("%s differs from the embedded file (%v)", f.Name(), err)
				}
			}
			out := must(t, "", "migrate", "get", "--version", "1", "--driver", name)
			first, _ := os.ReadFile(filepath.Join(src, want[0].Name()))
			if !strings.Contains(out, string(first)) || !strings.Contains(out, "INTO sqlstreams_migration (version, applied_at)") {
				t.Fatalf("migrate get --version 1 lacks the file or its record statement:\n%s", out)
			}
			if r := cli(t, "", "migrate", "get", "--all"); r.code != 2 {
				t.Fatalf("get with neither --driver nor --url: %v", r)
			}
		})
	}
	eachBackend(t, func(t *testing.T, url string) {
		r := cli(t, url, "migrate", "validate")
		if r.code != 3 || !strings.Contains(r.stderr, "database schema is outdated") {
			t.Fatalf("validate on an empty database: %v", r)
		}
		r = cli(t, url, "--no-migrate", "streams", "list")
		if r.code != 1 || !strings.Contains(r.stderr, "database schema is outdated") {
			t.Fatalf("--no-migrate on an empty database: %v", r)
		}
		plan := decode[struct {
			DryRun bool `json:"dry_run"`
			Steps  []struct {
				Version int    `json:"version"`
				SQL     string `json:"sql"`
			} `json:"steps"`
		}](t, must(t, url, "-o", "json", "migrate", "up", "--dry-run", "--show-sql", "--target-version", "2"))
		if !plan.DryRun || len(plan.Steps) != 2 || plan.Steps[1].Version != 2 || plan.Steps[0].SQL == "" {
			t.Fatalf("dry run: %+v", plan)
		}
		if cli(t, url, "migrate", "validate").code != 3 {
			t.Fatal("a dry run applied migrations")
		}
		out := must(t, url, "migrate", "up", "--target-version", "2")
		if !strings.Contains(out, "applied 1 ") || !strings.Contains(out, "applied 2 ") || strings.Contains(out, "applied 3 ") {
			t.Fatalf("up to 2:\n%s", out)
		}
		must(t, url, "migrate", "up")
		must(t, url, "migrate", "validate")
		must(t, url, "--no-migrate", "streams", "list")
		list := must(t, url, "migrate", "list")
		if strings.Count(list, "2000") != 0 || strings.Contains(list, " - ") {
			// every row is applied: no "-" in APPLIED-AT
			t.Fatalf("migrate list after up:\n%s", list)
		}
	})
}

// TestReplayAllProgress: --all pages through a large backlog; a terminal
// gets a progress bar on stderr, json output and pipes never do.
func TestReplayAllProgress(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := goClient(t, url)
	stream := client.Stream[OrderV1]("bulk")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []sqlstreams.Message[OrderV1]
	for i := range 250 {
		msgs = append(msgs, sqlstreams.NewMessage(OrderV1{OrderID: fmt.Sprint(i)}))
	}
	produce := func() {
		if _, err := producer.ProduceBatch(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	produce()
	consumer, err := stream.Consumer("g").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	bury := func() {
		for _, d := range claimAll(t, consumer, 250) {
			if err := d.Dead(ctx, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
		}
	}
	bury()
	r := cliWith(t, &sqlstreamscli.Options{Terminal: func(io.Writer) bool { return true }}, url, "dead", "replay", "bulk", "g", "--all")
	if r.code != 0 || r.stdout != "REPLAYED\n250\n" {
		t.Fatalf("replay --all: %v", r)
	}
	if !strings.Contains(r.stderr, "replay [") || !strings.Contains(r.stderr, "] 250/250") || !strings.Contains(r.stderr, "] 100/250") {
		t.Fatalf("no progress bar on a terminal:\n%q", r.stderr)
	}
	bury() // the replayed rows die again
	r = cliWith(t, &sqlstreamscli.Options{Terminal: func(io.Writer) bool { return true }}, url, "-o", "json", "dead", "discard", "bulk", "g", "--all", "--yes")
	if r.code != 0 || r.stderr != "" || decode[map[string]any](t, r.stdout)["discarded"] != float64(250) {
		t.Fatalf("discard --all -o json: %v", r)
	}
	if r := cli(t, url, "dead", "discard", "bulk", "g", "--all"); r.code != 2 {
		t.Fatalf("discard without --yes: %v", r)
	}
	if r := cli(t, url, "dead", "replay", "bulk", "g"); r.code != 2 {
		t.Fatalf("replay with neither ids nor --all: %v", r)
	}
	// Not a terminal: no bar.
	produce()
	bury()
	if r := cli(t, url, "dead", "discard", "bulk", "g", "--all", "--yes"); r.code != 0 || r.stderr != "" || r.stdout != "DISCARDED\n250\n" {
		t.Fatalf("discard --all on a pipe: %v", r)
	}
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// TestJSONKeys: every -o json document of the golden cases parses and all
// its keys are snake_case (user data inside payload, headers and schema
// aside).
func TestJSONKeys(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	seed(t, url)
	n := 0
	for _, c := range goldenCases {
		if c.args[0] == "__complete" {
			continue // the shell's protocol, not a document
		}
		args := append(slices.Clone(c.args), "-o", "json")
		r := cli(t, url, args...)
		if r.code != 0 && r.code != 3 {
			continue
		}
		if r.stdout == "" && r.code == 3 {
			continue // refused, with nothing to report but the error
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%s: -o json does not parse: %v\n%s", c.name, err, r.stdout)
			continue
		}
		n++
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if !snakeKey.MatchString(k) {
						t.Errorf("%s: key %q at %s is not snake_case", c.name, k, path)
					}
					if k != "payload" && k != "headers" && k != "schema" {
						walk(path+"."+k, e)
					}
				}
			case []any:
				for _, e := range x {
					walk(path+"[]", e)
				}
			}
		}
		walk("", v)
	}
	if n < 25 {
		t.Fatalf("only %d commands produced a JSON document", n)
	}
}

// TestAddCommand: an embedding program adds a command next to the built-in
// ones; it reaches the client opened from --url, and its errors map to the
// exit codes.
func TestAddCommand(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	must(t, url, "streams", "create", "orders")
	run := func(args ...string) result {
		var stdout, stderr bytes.Buffer
		c := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
		var fail string
		cmd := &cobra.Command{Use: "count", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, args []string) error {
			client, err := c.Client(cmd.Context())
			if err != nil {
				return err
			}
			streams, err := client.Streams(cmd.Context())
			if err != nil {
				return err
			}
			switch fail {
			case "check":
				return sqlstreamscli.CheckFailedf("too few streams: %d", len(streams))
			case "usage":
				return sqlstreamscli.Usagef("count takes no --fail=usage")
			}
			if c.JSON() {
				return c.WriteJSON(map[string]int{"streams": len(streams)})
			}
			_, err = fmt.Fprintln(c.Stdout(), len(streams))
			return err
		}}
		cmd.Flags().StringVar(&fail, "fail", "", "")
		c.AddCommand(cmd)
		code := c.Execute(context.Background(), append([]string{"--url", url}, args...))
		return result{stdout.String(), stderr.String(), code}
	}
	if r := run("count"); r.code != 0 || r.stdout != "1\n" {
		t.Fatalf("count: %v", r)
	}
	if r := run("-o", "json", "count"); r.code != 0 || r.stdout != "{\n  \"streams\": 1\n}\n" {
		t.Fatalf("count -o json: %v", r)
	}
	if r := run("count", "--fail", "check"); r.code != 3 || r.stderr != "sqlstreams: too few streams: 1\n" {
		t.Fatalf("check failure: %v", r)
	}
	if r := run("count", "--fail", "usage"); r.code != 2 {
		t.Fatalf("usage failure: %v", r)
	}
	if r := run("count", "extra"); r.code != 2 {
		t.Fatalf("extra argument: %v", r)
	}
}

// TestErrorsMatch: the CLI's errors keep their causes for errors.Is.
func TestErrorsMatch(t *testing.T) {
	t.Parallel()
	c := sqlstreamscli.New(&sqlstreamscli.Options{Getenv: func(string) string { return "" }})
	if _, err := c.Driver(); !errors.Is(err, sqlstreamscli.ErrNoURL) || !errors.Is(err, sqlstreamscli.ErrUsage) {
		t.Fatalf("Driver without a URL: %v", err)
	}
	c = sqlstreamscli.New(&sqlstreamscli.Options{Getenv: func(string) string { return "redis://x" }})
	if _, err := c.Client(context.Background()); !errors.Is(err, dsn.ErrInvalidURL) || !errors.Is(err, sqlstreamscli.ErrUsage) {
		t.Fatalf("Client on a redis URL: %v", err)
	}
	var stderr bytes.Buffer
	c = sqlstreamscli.New(&sqlstreamscli.Options{Stdout: io.Discard, Stderr: &stderr})
	if c.Execute(context.Background(), []string{"version"}) != 0 || c.Execute(context.Background(), []string{"version"}) != 1 ||
		!strings.Contains(stderr.String(), "make a new one with New") {
		t.Fatalf("a second Execute: %s", stderr.String())
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{sqlstreamscli.Usagef("x"), 2},
		{fmt.Errorf("wrapped: %w", sqlstreamscli.CheckFailedf("x")), 3},
		{sqlstreams.ErrStreamNotFound, 1},
	} {
		if got := sqlstreamscli.ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestGlobalFlags: --verbose logs on stderr (and nothing is logged without
// it); --timeout bounds a command and says which flag to raise.
func TestGlobalFlags(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	must(t, url, "streams", "create", "orders")
	r := cli(t, url, "-v", "streams", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "level=DEBUG") || !strings.Contains(r.stderr, "driver=sqlite") ||
		!strings.Contains(r.stderr, `command="sqlstreams streams list"`) {
		t.Fatalf("-v: %v", r)
	}
	if r := cli(t, url, "streams", "list"); r.code != 0 || r.stderr != "" {
		t.Fatalf("without -v: %v", r)
	}
	r = cli(t, url, "--timeout", "1ns", "streams", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "deadline exceeded") || !strings.Contains(r.stderr, "raise --timeout") {
		t.Fatalf("--timeout 1ns: %v", r)
	}
	if r := cli(t, url, "--timeout", "soon", "streams", "list"); r.code != 2 {
		t.Fatalf("a bad --timeout: %v", r)
	}
}

// TestDeadByID: replay and discard named ids; a settled id counts 0 and
// dead show then says it is not found.
func TestDeadByID(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		seed(t, url)
		if out := must(t, url, "dead", "discard", "orders", "billing", "4", "--yes"); out != "DISCARDED\n1\n" {
			t.Fatalf("discard 4: %q", out)
		}
		if out := must(t, url, "-o", "json", "dead", "discard", "orders", "billing", "4", "--yes"); decode[map[string]any](t, out)["discarded"] != float64(0) {
			t.Fatalf("discard 4 again: %s", out)
		}
		if out := must(t, url, "dead", "replay", "orders", "billing", "4", "5"); out != "REPLAYED\n0\n" {
			t.Fatalf("replay settled ids: %q", out)
		}
		if r := cli(t, url, "dead", "show", "orders", "billing", "4"); r.code != 1 || !strings.Contains(r.stderr, "dead letter not found") {
			t.Fatalf("show a discarded letter: %v", r)
		}
		if r := cli(t, url, "dead", "replay", "orders", "billing", "x"); r.code != 2 {
			t.Fatalf("a bad id: %v", r)
		}
		if r := cli(t, url, "dead", "list", "orders", "audit"); r.code != 0 || r.stdout != "ID  VERSION  PARTITION  KEY  ROUTING-KEY  ATTEMPTS  FIRST-FAILED  DIED-AT  ERROR\n" {
			t.Fatalf("dead list of a group without dead letters: %v", r)
		}
		for _, args := range [][]string{{"dead", "list", "orders", "nobody"}, {"dead", "show", "orders", "nobody", "4"},
			{"dead", "replay", "orders", "nobody", "--all"}, {"dead", "discard", "orders", "nobody", "4", "--yes"}} {
			if r := cli(t, url, args...); r.code != 1 || !strings.Contains(r.stderr, `stream "orders" has no group "nobody": consumer group not found; it has audit, billing`) {
				t.Fatalf("%v: %v", args, r)
			}
		}
		// --force deletes a group that still has a leased delivery.
		if r := cli(t, url, "groups", "delete", "orders", "billing", "--yes"); r.code != 3 || !strings.Contains(r.stderr, "has 1 leased") {
			t.Fatalf("delete with a lease out: %v", r)
		}
		must(t, url, "groups", "delete", "orders", "billing", "--yes", "--force")
		if r := cli(t, url, "groups", "describe", "orders", "billing"); r.code != 1 || !strings.Contains(r.stderr, "group not found") {
			t.Fatalf("describe a deleted group: %v", r)
		}
	})
}

// TestDeadListPages: --after and --limit page through the dead letters.
func TestDeadListPages(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := goClient(t, url)
	p, err := client.Stream[OrderV1]("s").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := p.Produce(ctx, OrderV1{OrderID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.Stream[OrderV1]("s").Consumer("g").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range claimAll(t, c, 5) {
		if err := d.Dead(ctx, errors.New(strings.Repeat("very long error ", 20))); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		DeadLetters []struct {
			ID    int64  `json:"id"`
			Error string `json:"error"`
		} `json:"dead_letters"`
		NextAfter int64 `json:"next_after"`
	}
	var ids []int64
	after := "0"
	for range 5 {
		pg := decode[page](t, must(t, url, "-o", "json", "dead", "list", "s", "g", "--limit", "2", "--after", after))
		for _, d := range pg.DeadLetters {
			ids = append(ids, d.ID)
			if len(d.Error) != 320 {
				t.Fatalf("json cut the error: %q", d.Error)
			}
		}
		if pg.NextAfter == 0 {
			break
		}
		after = fmt.Sprint(pg.NextAfter)
	}
	if !slices.Equal(ids, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("paged ids %v", ids)
	}
	r := cli(t, url, "dead", "list", "s", "g", "--limit", "2")
	if r.code != 0 || !strings.Contains(r.stderr, "more may follow: add --after 2") {
		t.Fatalf("table page: %v", r)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		if !strings.HasSuffix(line, "…") || len([]rune(line[strings.Index(line, "very"):])) != 80 {
			t.Fatalf("the table's error is not cut to 80 runes: %q", line)
		}
	}
	if r := cli(t, url, "dead", "list", "s", "g", "--limit", "0"); r.code != 2 {
		t.Fatalf("--limit 0: %v", r)
	}
}

// TestMaintain: maintain runs compaction once and reports what it removed.
func TestMaintain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		must(t, url, "streams", "create", "accounts", "--compacted")
		for i := range 3 {
			must(t, url, "produce", "accounts", "--version", "1", "--key", "acct-1", "--data", fmt.Sprintf(`{"balance":%d}`, i))
		}
		got := decode[map[string]int64](t, must(t, url, "-o", "json", "maintain"))
		if got["compacted"] != 2 || got["retained"] != 0 || got["removed_unread"] != 0 {
			t.Fatalf("maintain: %v", got)
		}
		if out := must(t, url, "maintain"); out != "COMPACTED  RETAINED  REMOVED-UNREAD\n0          0         0\n" {
			t.Fatalf("maintain again:\n%s", out)
		}
		recs := must(t, url, "-o", "jsonl", "tail", "accounts")
		if strings.Count(recs, "\n") != 1 || !strings.Contains(recs, `"balance":2`) {
			t.Fatalf("after compaction the log holds:\n%s", recs)
		}
	})
}

// TestTailFollowTable: in table output, --follow prints the header once,
// then rows as they arrive, with -o json it writes lines.
func TestTailFollowTable(t *testing.T) {
	t.Parallel()
	for _, output := range []string{"table", "json"} {
		t.Run(output, func(t *testing.T) {
			t.Parallel()
			url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := goClient(t, url)
			producer, err := client.Stream[OrderV1]("events").Producer().Register(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := producer.Produce(ctx, OrderV1{OrderID: "first"}); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr syncBuffer
			followCtx, stop := context.WithCancel(ctx)
			code := make(chan int, 1)
			go func() {
				c := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: &stdout, Stderr: &stderr, PollInterval: 5 * time.Millisecond,
					Getenv: func(string) string { return url }})
				code <- c.Execute(followCtx, []string{"-o", output, "tail", "events", "-f"})
			}()
			eventually(t, "the first row is printed", func() bool { return strings.Contains(stdout.String(), `"first"`) })
			if _, err := producer.Produce(ctx, OrderV1{OrderID: "second"}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the second row is printed", func() bool { return strings.Contains(stdout.String(), `"second"`) })
			stop()
			if c := <-code; c != 0 {
				t.Fatalf("exit %d: %s", c, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			switch output {
			case "table":
				if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  PARTITION") || strings.Count(stdout.String(), "PARTITION") != 1 {
					t.Fatalf("table follow output:\n%s", stdout.String())
				}
			case "json":
				if len(lines) != 2 || !json.Valid([]byte(lines[0])) || !json.Valid([]byte(lines[1])) {
					t.Fatalf("json follow output:\n%s", stdout.String())
				}
			}
		})
	}
}

// TestGroupsCreate: a group created by the CLI before any consumer runs is
// the group a typed consumer of its version then joins, and that consumer
// reads from where --at put it: after the rows present (latest), from a
// time, from an id.
func TestGroupsCreate(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		client := goClient(t, url)
		stream := client.Stream[OrderV1]("payments")
		producer, err := stream.Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		produce := func(id string) int64 {
			n, err := producer.Produce(ctx, OrderV1{OrderID: id})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		produce("P-1")
		produce("P-2")
		third := produce("P-3")
		var browse sqlstreams.BrowsePage
		if browse, err = client.Stream[sqlstreams.RawPayload]("payments").Browse(ctx, sqlstreams.BrowseOptions{AfterID: third - 1, Limit: 1}); err != nil || len(browse.Records) != 1 {
			t.Fatalf("browse row %d: %v %+v", third, err, browse)
		}
		at := browse.Records[0].ProducedAt.Format(time.RFC3339Nano)
		must(t, url, "groups", "create", "payments", "late", "--version", "1", "--at", "latest")
		must(t, url, "groups", "create", "payments", "by-id", "--version", "v1", "--at", fmt.Sprint(third))
		must(t, url, "groups", "create", "payments", "by-time", "--version", "1", "--at", at)
		must(t, url, "groups", "create", "payments", "all", "--version", "1")
		fourth := produce("P-4")
		for _, c := range []struct {
			group string
			want  []string
		}{{"late", []string{"P-4"}}, {"by-id", []string{"P-3", "P-4"}}, {"all", []string{"P-1", "P-2", "P-3", "P-4"}}} {
			consumer, err := stream.Consumer(c.group).Register(ctx, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.group, err)
			}
			var got []string
			for _, d := range claimAll(t, consumer, len(c.want)) {
				got = append(got, d.Value.OrderID)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("group %s read %v, want %v", c.group, got, c.want)
			}
		}
		// Rows produced in the same second may share the time: by-time reads
		// P-3 and everything after it, and nothing produced before P-3's time.
		consumer, err := stream.Consumer("by-time").Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range 50 {
			ds, err := consumer.Claim(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
			if slices.Contains(ids, fourth) {
				break
			}
		}
		if !slices.Contains(ids, third) || !slices.Contains(ids, fourth) {
			t.Fatalf("by-time claimed ids %v; want %d and %d among them", ids, third, fourth)
		}
		if _, err := client.Stream[OrderV2]("payments").Consumer("late").Register(ctx, nil); !errors.Is(err, sqlstreams.ErrGroupVersion) {
			t.Fatalf("a v2 consumer joining the v1 group the CLI made: %v", err)
		}
		if r := cli(t, url, "groups", "create", "nope", "g", "--version", "1"); r.code != 1 || !strings.Contains(r.stderr, "stream not found") {
			t.Fatalf("a group on a missing stream: %v", r)
		}
		if r := cli(t, url, "groups", "create", "payments", "bad name", "--version", "1"); r.code != 1 || !strings.Contains(r.stderr, "invalid name") {
			t.Fatalf("a bad group name: %v", r)
		}
	})
}

// jsonLines makes n lines {"acct":"a<i%7>","n":<i>}, with bad in place of
// line badAt (1-based) when badAt > 0.
func jsonLines(n, badAt int, bad string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == badAt {
			b.WriteString(bad + "\n")
			continue
		}
		fmt.Fprintf(&b, "{\"acct\":\"a%d\",\"n\":%d}\n", i%7, i)
	}
	return b.String()
}

// TestProduceLines: produce reads JSON Lines from stdin in batches, with the
// key from a field and headers on every line; a bad line fails naming it,
// with every batch before it written and nothing of its own batch.
func TestProduceLines(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		must(t, url, "streams", "create", "lines", "--partitions", "2")
		count := func() int {
			page := decode[struct {
				Records []struct {
					ID      int64             `json:"id"`
					Key     *string           `json:"key"`
					Headers map[string]string `json:"headers"`
				} `json:"records"`
			}](t, must(t, url, "-o", "json", "tail", "lines", "--limit", "5000"))
			for _, r := range page.Records {
				if r.Key == nil || !strings.HasPrefix(*r.Key, "a") || r.Headers["source"] != "import" {
					t.Fatalf("row %d: key %v headers %v", r.ID, r.Key, r.Headers)
				}
			}
			return len(page.Records)
		}
		r := cliWith(t, &sqlstreamscli.Options{Stdin: strings.NewReader(jsonLines(1203, 0, ""))}, url,
			"-o", "json", "produce", "lines", "--version", "1", "--key-field", "acct", "--header", "source=import", "--progress")
		out := decode[struct {
			Produced        int64 `json:"produced"`
			FirstID, LastID int64
		}](t, r.stdout)
		if r.code != 0 || out.Produced != 1203 || strings.Count(r.stderr, "produced ") != 3 {
			t.Fatalf("1203 lines with --progress: %v", r)
		}
		if n := count(); n != 1203 {
			t.Fatalf("tail shows %d rows, want 1203", n)
		}
		// On a terminal: a line rewritten in place, ended once.
		r = cliWith(t, &sqlstreamscli.Options{Stdin: strings.NewReader(jsonLines(600, 0, "")), Terminal: func(io.Writer) bool { return true }},
			url, "produce", "lines", "--version", "1", "--key-field", "acct", "--header", "source=import")
		if r.code != 0 || !strings.HasPrefix(r.stderr, "\rproduced 500 messages") || !strings.HasSuffix(r.stderr, "\rproduced 600 messages (line 600, last id 1803)\n") {
			t.Fatalf("600 lines on a terminal: %q", r.stderr)
		}
		for _, c := range []struct {
			name, input string
			want        []string
			added       int
		}{
			{"bad JSON in the second batch", jsonLines(900, 702, `{"acct": "a1", n: 2}`),
				[]string{"stdin line 702: invalid message: not a JSON document: invalid character 'n'", "lines 1 to 500 were written before it", "from line 501"}, 500},
			{"no key field", jsonLines(10, 3, `{"n": 3}`), []string{"stdin line 3: invalid message: no top-level field \"acct\"", "nothing was written"}, 0},
			{"a key that is an object", jsonLines(10, 4, `{"acct": {"x": 1}}`), []string{"stdin line 4:", "a key is a string or a number", "nothing was written"}, 0},
			{"invalid UTF-8 core refuses", jsonLines(10, 5, "{\"acct\": \"a1\", \"s\": \"\xff\"}"), []string{"stdin line 5:", "not valid UTF-8", "nothing was written"}, 0},
		} {
			before := count()
			r := cliWith(t, &sqlstreamscli.Options{Stdin: strings.NewReader(c.input)}, url,
				"produce", "lines", "--version", "1", "--key-field", "acct", "--header", "source=import")
			if r.code != 1 {
				t.Fatalf("%s: %v", c.name, r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("%s: stderr lacks %q: %v", c.name, w, r)
				}
			}
			if added := count() - before; added != c.added {
				t.Fatalf("%s: %d rows written, want %d", c.name, added, c.added)
			}
		}
		for _, args := range [][]string{{"--key", "k", "--key-field", "acct"}, {"--key-field", "acct", "--data", "{}"}, {"--progress", "--data", "{}"}} {
			if r := cli(t, url, append([]string{"produce", "lines", "--version", "1"}, args...)...); r.code != 2 {
				t.Fatalf("produce %v: %v", args, r)
			}
		}
		if r := cli(t, url, "produce", "lines", "--version", "1"); r.code != 2 || !strings.Contains(r.stderr, "stdin had none") {
			t.Fatalf("empty stdin: %v", r)
		}
	})
}

// TestCompletion: the completion scripts for each shell, and name completion
// that never migrates a database.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if r := cli(t, "", "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "sqlstreams") {
			t.Fatalf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
	url := "sqlite:" + filepath.Join(t.TempDir(), "fresh.db")
	if r := cli(t, url, "__complete", "health", ""); r.code != 0 || !strings.Contains(r.stdout, ":") {
		t.Fatalf("completing on a database that is not migrated: %v", r)
	}
	if r := cli(t, url, "migrate", "validate"); r.code != 3 {
		t.Fatalf("completion migrated the database: migrate validate %v", r)
	}
}
