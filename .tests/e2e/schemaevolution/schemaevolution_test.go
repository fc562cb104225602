// Package schemaevolution runs the product brief's two stories end to end,
// with producers, consumers and the bridge as separate OS processes, on every
// driver: the rolling deploy of a new message version on a plain stream, and
// the bridge that moves a compacted stream's heads to the new version while
// it is killed with SIGKILL and restarted.
package schemaevolution

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// OrderPlacedV1 is the month-old shape: the total in cents.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Seq     int    `json:"seq"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// Money replaces the bare cents.
type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlacedV2 is the new shape. A v1 payload's numeric total cannot decode
// into it and a v2 payload's object total cannot decode into V1, so a row
// that reached the wrong decoder would be dead-lettered and show up.
type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Seq     int    `json:"seq"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

// AccountV1 and AccountV2 are the compacted stream's value per account.
type AccountV1 struct {
	Account string `json:"account"`
	Balance int64  `json:"balance"`
}

func (AccountV1) SchemaVersion() int { return 1 }

type AccountV2 struct {
	Account string `json:"account"`
	Balance Money  `json:"balance"`
	// Source says who wrote the value: "bridge" copies or "live" writes.
	Source string `json:"source"`
}

func (AccountV2) SchemaVersion() int { return 2 }

// spec tells a child process what to do.
type spec struct {
	Driver    string
	Namespace string
	Stream    string
	Group     string
	Out       string
	Count     int
	From      int
	Keys      int
	Seed      uint64
	PoisonSeq int
}

func TestMain(m *testing.M) {
	roles := map[string]proctest.Role{}
	for name, role := range map[string]func(context.Context, *sqlstreams.Client, spec, *proctest.Recorder) error{
		"produce-v1": produceV1, "produce-v2": produceV2, "consume-v1": consumeV1, "consume-v2": consumeV2,
		"bridge": bridge, "live": live,
	} {
		roles[name] = func(ctx context.Context, raw json.RawMessage) int { return runRole(ctx, raw, role) }
	}
	proctest.Dispatch(roles)
	os.Exit(m.Run())
}

func runRole(ctx context.Context, raw json.RawMessage, role func(context.Context, *sqlstreams.Client, spec, *proctest.Recorder) error) int {
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	target, ok := targetsByName()[s.Driver]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown driver", s.Driver)
		return 2
	}
	return conformance.RunChild(ctx, target, s.Namespace, s.Out, func(ctx context.Context, c *sqlstreams.Client, rec *proctest.Recorder) error {
		return role(ctx, c, s, rec)
	})
}

// eachDriver runs a scenario on every driver, in parallel.
func eachDriver(t *testing.T, scenario func(t *testing.T, target conformance.Target)) {
	for _, target := range targets() {
		t.Run(target.Name, func(t *testing.T) {
			t.Parallel()
			scenario(t, target)
		})
	}
}

func openClient(t testing.TB, target conformance.Target, ns string) *sqlstreams.Client {
	t.Helper()
	drv, err := target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sqlstreams.Open(context.Background(), drv, sqlstreams.WithMaintenanceInterval(0),
		sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func healthOf(t testing.TB, c *sqlstreams.Client, stream string) sqlstreams.Health {
	t.Helper()
	h, err := c.Stream[sqlstreams.RawPayload](stream).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func healthTable(h sqlstreams.Health) string {
	var sb strings.Builder
	_ = h.WriteTable(&sb)
	return sb.String()
}

func versionOf(t testing.TB, h sqlstreams.Health, v int) sqlstreams.VersionHealth {
	t.Helper()
	vh, ok := h.Version(v)
	if !ok {
		t.Fatalf("health has no version %d:\n%s", v, healthTable(h))
	}
	return vh
}

func groupOf(vh sqlstreams.VersionHealth, group string) (sqlstreams.GroupHealth, bool) {
	for _, g := range vh.Groups {
		if g.Group == group {
			return g, true
		}
	}
	return sqlstreams.GroupHealth{}, false
}

func waitFor(t testing.TB, within time.Duration, what string, diagnose func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s\n%s", within, what, diagnose())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
