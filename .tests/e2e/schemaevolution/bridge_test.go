package schemaevolution

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

const (
	accountsStream = "accounts"
	accounts       = 1000
	liveWrites     = 400
	bridgeKills    = 4
)

// TestBridge: accounts hold v1 heads; a bridge process bound to v1
// re-produces each head as v2 at CompactionRank(-1) while a live producer
// writes rank-0 v2 values for random accounts. The bridge is killed with
// SIGKILL at random points and restarted. At the end every head is v2, every
// account with a live write shows its latest live write, no account is lost
// or doubled, and v1 reads "compaction heads remain" until its last head goes,
// then retirable.
func TestBridge(t *testing.T) {
	eachDriver(t, testBridge)
}

func testBridge(t *testing.T, target conformance.Target) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (kill points and live keys)", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	ns := target.NewNamespace(t)
	c := openClient(t, target, ns)
	ctx := context.Background()
	if _, err := c.Stream[AccountV1](accountsStream).Create(ctx, &sqlstreams.StreamOptions{Partitions: 2, Compacted: true}); err != nil {
		t.Fatal(err)
	}
	v1, err := c.Stream[AccountV1](accountsStream).Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for start := 1; start <= accounts; start += 200 {
		var msgs []sqlstreams.Message[AccountV1]
		for i := start; i < start+200 && i <= accounts; i++ {
			msgs = append(msgs, sqlstreams.NewMessage(AccountV1{Account: account(i), Balance: int64(i * 10)}, sqlstreams.Key(account(i))))
		}
		if _, err := v1.ProduceBatch(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	diagnose := func() string { return fmt.Sprintf("seed %d\n%s", seed, healthTable(healthOf(t, c, accountsStream))) }
	headsRemain := func(when string) {
		vh := versionOf(t, healthOf(t, c, accountsStream), 1)
		if vh.Heads == 0 {
			return
		}
		if vh.Retirable || !strings.Contains(vh.Verdict(), "compaction heads remain") {
			t.Errorf("%s: v1 has %d heads but reads %q, want \"compaction heads remain\"\n%s", when, vh.Heads, vh.Verdict(), diagnose())
		}
	}
	if vh := versionOf(t, healthOf(t, c, accountsStream), 1); vh.Heads != accounts {
		t.Fatalf("v1 has %d heads, want %d\n%s", vh.Heads, accounts, diagnose())
	}
	headsRemain("before the bridge")
	if _, err := c.Stream[AccountV1](accountsStream).Consumer("bridge").Register(ctx, nil); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	liveOut, bridgeOut := filepath.Join(dir, "live"), filepath.Join(dir, "bridge")
	run := func(role, out string) *proctest.Child {
		return proctest.Spawn(t, role, spec{Driver: target.Name, Namespace: ns, Stream: accountsStream, Group: "bridge",
			Out: out, Count: liveWrites, Keys: accounts, Seed: seed})
	}
	liveProducer := run("live", liveOut)
	for kill := 1; kill <= bridgeKills; kill++ {
		b := run("bridge", bridgeOut)
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		b.Kill()
		headsRemain(fmt.Sprintf("after kill %d", kill))
	}
	final := run("bridge", bridgeOut)
	liveProducer.Wait(t, 3*time.Minute, "the live producer")
	waitFor(t, 3*time.Minute, "the bridge to move every head to v2", diagnose, func() bool {
		vh := versionOf(t, healthOf(t, c, accountsStream), 1)
		g, ok := groupOf(vh, "bridge")
		headsRemain("while draining")
		return vh.Heads == 0 && ok && g.Unread == 0 && g.Unresolved == 0
	})
	final.Terminate()
	final.Wait(t, time.Minute, "the last bridge")
	if vh := versionOf(t, healthOf(t, c, accountsStream), 1); !vh.Retirable {
		t.Errorf("v1 without heads reads %q, want retirable\n%s", vh.Verdict(), diagnose())
	}

	// The latest live write per account, from the live producer's records.
	latestLive := map[string]int64{}
	for _, r := range proctest.Records(t, liveOut) {
		if r[0] != "live" {
			continue
		}
		id, _ := strconv.ParseInt(r[1], 10, 64)
		latestLive[r[2]] = max(latestLive[r[2]], id)
	}
	copies := 0
	for _, r := range proctest.Records(t, bridgeOut) {
		if r[0] == "copied" {
			copies++
		}
	}

	// Read every head through a fresh version-agnostic group: on a compacted
	// stream only heads are claimable, so it sees exactly one row per key.
	auditor, err := c.Stream[sqlstreams.RawPayload](accountsStream).Consumer("auditor").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	heads := map[string]sqlstreams.Delivery[sqlstreams.RawPayload]{}
	for {
		ds, err := auditor.Claim(ctx, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if prev, dup := heads[d.Key]; dup {
				t.Errorf("account %s has two heads: rows %d and %d", d.Key, prev.ID, d.ID)
			}
			heads[d.Key] = d
		}
		if err := auditor.Ack(ctx, ds...); err != nil {
			t.Fatal(err)
		}
	}
	if len(heads) != accounts {
		t.Errorf("%d accounts have a head, want %d", len(heads), accounts)
	}
	for i := 1; i <= accounts; i++ {
		key := account(i)
		d, ok := heads[key]
		if !ok {
			t.Errorf("account %s lost its head", key)
			continue
		}
		var v AccountV2
		if d.SchemaVersion != 2 || json.Unmarshal(d.Value.Data, &v) != nil {
			t.Errorf("account %s head is row %d at v%d: %s", key, d.ID, d.SchemaVersion, d.Value.Data)
			continue
		}
		if live, ok := latestLive[key]; ok {
			if d.ID != live || v.Source != "live" || d.CompactionRank != 0 {
				t.Errorf("account %s: head is row %d (%s, rank %d), want its latest live write, row %d", key, d.ID, v.Source, d.CompactionRank, live)
			}
			continue
		}
		if v.Source != "bridge" || d.CompactionRank != -1 || v.Balance.Cents != int64(i*10) {
			t.Errorf("account %s: head is row %d %+v at rank %d, want the bridge copy of balance %d", key, d.ID, v, d.CompactionRank, i*10)
		}
	}
	t.Logf("%d live writes over %d accounts, %d bridge copies, %d kills", liveWrites, len(latestLive), copies, bridgeKills)
}

func account(i int) string { return "acct-" + strconv.Itoa(i) }

// bridge consumes v1 heads and re-produces each as v2 at rank -1, until
// SIGTERM or SIGKILL.
func bridge(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	out, err := c.Stream[AccountV2](s.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	in, err := c.Stream[AccountV1](s.Stream).Consumer(s.Group).Register(ctx, &sqlstreams.ConsumerOptions{
		Concurrency: 4, BatchSize: 16, LeaseDuration: time.Second, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	return in.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[AccountV1]) error {
		copyID, err := out.Produce(ctx, AccountV2{Account: d.Value.Account, Balance: Money{Cents: d.Value.Balance, Currency: "EUR"}, Source: "bridge"},
			sqlstreams.Key(d.Key), sqlstreams.CompactionRank(-1))
		if err != nil {
			return err
		}
		return rec.Record("copied", copyID, d.Key, d.ID)
	})
}

// live writes rank-0 v2 values for random accounts.
func live(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	p, err := c.Stream[AccountV2](s.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(s.Seed, 7))
	for n := range s.Count {
		key := account(1 + rng.IntN(s.Keys))
		id, err := p.Produce(ctx, AccountV2{Account: key, Balance: Money{Cents: int64(n), Currency: "EUR"}, Source: "live"}, sqlstreams.Key(key))
		if err != nil {
			return err
		}
		if err := rec.Record("live", id, key); err != nil {
			return err
		}
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
	return nil
}
