package sqlstreamscli_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// gateCase is one command line and what it must answer: the exit code and
// substrings of stdout and stderr ("" checks nothing).
type gateCase struct {
	name           string
	args           []string
	code           int
	stdout, stderr string
}

func runGateCases(t *testing.T, url string, cases []gateCase) {
	t.Helper()
	for _, c := range cases { // in order: later cases see what earlier ones did
		r := cli(t, url, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout, c.stdout) || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("%s: sqlstreams %s: want exit %d, stdout with %q, stderr with %q; got %v",
				c.name, strings.Join(c.args, " "), c.code, c.stdout, c.stderr, r)
		}
	}
}

// produceAndClaim produces n v1 rows and claims them for group, which it
// registers.
func produceAndClaim(t *testing.T, s *sqlstreams.Stream[OrderV1], group string, n int) []sqlstreams.Delivery[OrderV1] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := s.Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := p.Produce(ctx, OrderV1{OrderID: fmt.Sprintf("%s-%d", group, i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Consumer(group).Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return claimAll(t, c, n)
}

// healthVersions lists the versions of the stream's health read.
func healthVersions(t *testing.T, url, stream string) []int {
	t.Helper()
	var out []int
	for _, v := range decode[healthDoc](t, must(t, url, "-o", "json", "health", stream)).Versions {
		out = append(out, v.Version)
	}
	return out
}

// TestRetirableGate: health --retirable passes for a version that was
// really retired (rows removed by retention, its group deleted, its schema
// registered) and fails with exit 3, listing the versions the stream has,
// for one it never had.
func TestRetirableGate(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		client := goClient(t, url)
		orders := client.Stream[OrderV1]("orders")
		if _, err := orders.Create(ctx, &sqlstreams.StreamOptions{Retention: sqlstreams.Retention{MaxRows: 1}}); err != nil {
			t.Fatal(err)
		}
		for _, d := range produceAndClaim(t, orders, "old", 2) {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p2, err := client.Stream[OrderV2]("orders").Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p2.Produce(ctx, OrderV2{OrderID: "B-1"}); err != nil {
			t.Fatal(err)
		}
		must(t, url, "produce", "orders", "--version", "5", "--data", `{"raw":true}`) // rows, no registered schema
		runGateCases(t, url, []gateCase{
			{"v1 while its group is there", []string{"health", "orders", "--retirable", "v1"}, 0, "v1 is retirable\n", ""},
			{"delete the v1 group", []string{"groups", "delete", "orders", "old", "--yes"}, 0, "deleted group old", ""},
			{"retention", []string{"maintain"}, 0, "", ""},
		})
		if got := healthVersions(t, url, "orders"); !slices.Equal(got, []int{5}) {
			t.Fatalf("after retention health lists versions %v, want only v5 (v1 and v2 retired)", got)
		}
		runGateCases(t, url, []gateCase{
			{"retired v1", []string{"health", "orders", "--retirable", "v1"}, 0, "v1 is retirable (nothing left at it but its registered schema)\n", ""},
			{"retired v2", []string{"health", "orders", "--retirable", "2"}, 0, "v2 is retirable (nothing left at it but its registered schema)\n", ""},
			{"raw v5 with rows", []string{"health", "orders", "--retirable", "v5"}, 0, "v5 is retirable\n", ""},
			{"never had v7", []string{"health", "orders", "--retirable", "v7"}, 3, "v7 is not a version of orders",
				`stream orders has never had version 7: no rows, heads or group at it and no registered schema; it has v1,v2,v5 (check the version; health orders lists them)`},
			{"never had v3 json", []string{"health", "orders", "--retirable", "3", "-o", "json"}, 3,
				`"retirable": {
    "version": 3,
    "known": false,
    "retirable": false,
    "reasons": [
      "stream orders has never had version 3`, "never had version 3"},
			{"retired v1 json", []string{"health", "orders", "--retirable", "1", "-o", "json"}, 0,
				`"retirable": {
    "version": 1,
    "known": true,
    "retirable": true,
    "reasons": []`, ""},
			{"new stream", []string{"streams", "create", "empty"}, 0, "empty", ""},
			{"a stream with no version", []string{"health", "empty", "--retirable", "v1"}, 3, "", "it has none"},
			{"no such stream", []string{"health", "nope", "--retirable", "v1"}, 1, "", "stream not found"},
		})
	})
}

// TestDestroyGate: streams destroy is refused (exit 3) while groups have
// unread, leased, delayed or dead deliveries, naming each; --force destroys
// it and reports what went with it; a stream whose groups are done goes
// without --force.
func TestDestroyGate(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		seed(t, url) // orders: billing has 1 leased and 1 dead at v1, audit 2 unread at v2
		client := goClient(t, url)
		payments := client.Stream[OrderV1]("payments")
		ds := produceAndClaim(t, payments, "ledger", 2)
		if err := ds[0].Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ds[1].Retry(ctx, time.Hour, errors.New("ledger busy")); err != nil {
			t.Fatal(err)
		}
		runGateCases(t, url, []gateCase{
			{"orders refused", []string{"streams", "destroy", "orders", "--yes"}, 3, "",
				`sqlstreams: stream "orders" was not destroyed: its groups have deliveries left that would be lost: ` +
					`v1: group billing has 1 leased; v1: group billing has 1 dead (replay or discard them); v2: group audit has 2 unread; ` +
					`let the groups finish (health orders shows what is left), or add --force to destroy it anyway`},
			{"orders still there", []string{"streams", "describe", "orders"}, 0, "billing", ""},
			{"payments refused", []string{"streams", "destroy", "payments", "--yes"}, 3, "", "v1: group ledger has 1 delayed"},
			{"payments forced", []string{"streams", "destroy", "payments", "--yes", "--force"}, 0,
				"destroyed stream payments\nROWS  HEADS  GROUPS  UNREAD  LEASED  DELAYED  DEAD  SCHEMA-REVISIONS\n" +
					"2     0      ledger  0       0       1        0     1\nlost with it (--force):\n  - v1: group ledger has 1 delayed\n", ""},
			{"payments gone", []string{"streams", "describe", "payments"}, 1, "", "stream not found"},
			{"orders forced json", []string{"streams", "destroy", "orders", "--yes", "--force", "-o", "json"}, 0,
				`"destroyed": "orders",
  "rows": 5,
  "heads": 0,
  "groups": [
    "audit",
    "billing"
  ],
  "unread": 2,
  "leased": 1,
  "delayed": 0,
  "dead": 1,
  "schema_revisions": 2,
  "lost": [`, ""},
			{"orders gone", []string{"health", "orders"}, 1, "", "stream not found"},
			{"accounts has no group", []string{"streams", "destroy", "accounts", "--yes"}, 0, "destroyed stream accounts\n", ""},
			{"unknown stream", []string{"streams", "destroy", "nope", "--yes"}, 1, "", "stream not found"},
		})
	})
}
