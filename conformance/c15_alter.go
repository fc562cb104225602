package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C15_Alter", testAlter) }

// C15, Alter: Stream.Alter changes retention, switches compaction and adds
// partitions, for every process using the stream. Bad input is refused and
// changes nothing; a producer or consumer made before the change (in this
// client or another) plans with the new configuration from its next call.
// A driver without driver.Alterer answers ErrUnsupported.
func testAlter(t *testing.T, h *harness) {
	c := h.client(t)
	if _, ok := c.Driver().(driver.Alterer); !ok {
		one := false
		_, err := c.Stream[EventV1]("c15-alter-unsupported").Alter(ctx(t), sqlstreams.StreamChanges{Compacted: &one})
		wantErr(t, "Alter on a driver without driver.Alterer", err, sqlstreams.ErrUnsupported)
		return
	}
	t.Run("Refused", func(t *testing.T) { testAlterRefused(t, c) })
	t.Run("Retention", func(t *testing.T) { testAlterRetention(t, c) })
	t.Run("CompactionOn", func(t *testing.T) { testAlterCompactionOn(t, c) })
	t.Run("CompactionOff", func(t *testing.T) { testAlterCompactionOff(t, c) })
	t.Run("Partitions", func(t *testing.T) { testAlterPartitions(t, h, c) })
	t.Run("PartitionsUnderLoad", func(t *testing.T) { testAlterUnderLoad(t, h, c) })
}

func alter(t testing.TB, c *sqlstreams.Client, stream string, ch sqlstreams.StreamChanges) sqlstreams.StreamInfo {
	t.Helper()
	info, err := c.Stream[sqlstreams.RawPayload](stream).Alter(ctx(t), ch)
	if err != nil {
		t.Fatalf("Alter(%q, %+v): %v", stream, ch, err)
	}
	return info
}

func testAlterRefused(t *testing.T, c *sqlstreams.Client) {
	const stream = "c15-alter-refused"
	s := c.Stream[EventV1](stream)
	before, err := s.Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 3})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	no := false
	cases := []struct {
		name string
		ch   sqlstreams.StreamChanges
		want error
		says string
	}{
		{"fewer partitions", sqlstreams.StreamChanges{Partitions: 2}, sqlstreams.ErrFewerPartitions, "create a new stream"},
		{"fewer partitions with other changes", sqlstreams.StreamChanges{Partitions: 1, Compacted: &no}, sqlstreams.ErrFewerPartitions, "keep 3 or more"},
		{"nothing to change", sqlstreams.StreamChanges{}, sqlstreams.ErrInvalidOption, "set Partitions, Compacted or Retention"},
		{"negative partitions", sqlstreams.StreamChanges{Partitions: -1}, sqlstreams.ErrInvalidOption, "use 0 to keep"},
		{"too many partitions", sqlstreams.StreamChanges{Partitions: sqlstreams.MaxPartitions + 1}, sqlstreams.ErrInvalidOption, "up to"},
		{"negative age", sqlstreams.StreamChanges{Retention: &sqlstreams.Retention{MaxAge: -time.Second}}, sqlstreams.ErrInvalidOption, "MaxAge"},
		{"negative rows", sqlstreams.StreamChanges{Retention: &sqlstreams.Retention{MaxRows: -1}}, sqlstreams.ErrInvalidOption, "MaxRows"},
	}
	for _, tc := range cases {
		_, err := s.Alter(ctx(t), tc.ch)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
	if after, err := s.Get(ctx(t)); err != nil || after != before {
		t.Errorf("after refused changes the stream is %+v (%v); want it unchanged: %+v", after, err, before)
	}
	_, err = c.Stream[EventV1]("c15-alter-missing").Alter(ctx(t), sqlstreams.StreamChanges{Partitions: 2})
	wantErr(t, "Alter of a missing stream", err, sqlstreams.ErrStreamNotFound)
	_, err = c.Stream[EventV1]("bad name").Alter(ctx(t), sqlstreams.StreamChanges{Partitions: 2})
	wantErr(t, "Alter with a malformed name", err, sqlstreams.ErrInvalidName)
	// The same count changes nothing and is no error.
	if info := alter(t, c, stream, sqlstreams.StreamChanges{Partitions: 3}); info.Partitions != 3 {
		t.Errorf("Alter to the same count: %d partitions", info.Partitions)
	}
}

// Retention changed on a live stream applies from the next maintenance; a
// tightened limit then removes what it no longer allows.
func testAlterRetention(t *testing.T, c *sqlstreams.Client) {
	const stream = "c15-alter-retention"
	p := producer[EventV1](t, c, stream)
	ids := produceV1(t, p, 6)
	drain(t, consumer[EventV1](t, c, stream, "reader", nil))
	if rep := maintain(t, c); rep.Retained != 0 {
		t.Fatalf("maintenance without limits removed %d rows", rep.Retained)
	}
	want := sqlstreams.Retention{MaxAge: time.Hour, MaxRows: 2}
	info := alter(t, c, stream, sqlstreams.StreamChanges{Retention: &want})
	if info.Retention != want || info.Partitions != 1 || info.Compacted {
		t.Errorf("Alter returned %+v; want retention %+v and the rest unchanged", info, want)
	}
	if got, err := c.Stream[EventV1](stream).Get(ctx(t)); err != nil || got.Retention != want {
		t.Errorf("Get after Alter: %+v, %v; want retention %+v", got, err, want)
	}
	maintain(t, c)
	if got := retainedIDs(t, c, stream, "after-rows"); !slices.Equal(got, ids[4:]) {
		t.Errorf("after MaxRows went from none to 2, the log holds %v; want %v", got, ids[4:])
	}
	hard := sqlstreams.Retention{MaxRows: 1, Hard: true}
	if info := alter(t, c, stream, sqlstreams.StreamChanges{Retention: &hard}); info.Retention != hard {
		t.Errorf("Alter to a hard limit returned %+v", info.Retention)
	}
	maintain(t, c) // "reader" has not read the row "after-rows" read: a hard limit removes it anyway
	if got := retainedIDs(t, c, stream, "after-hard"); !slices.Equal(got, ids[5:]) {
		t.Errorf("after a hard MaxRows 1, the log holds %v; want %v", got, ids[5:])
	}
}

// Compaction switched on: heads are computed from the log at once; the
// rest (superseded and keyless rows) is no longer claimable and goes at
// the next maintenance; a producer made before the change now needs keys.
func testAlterCompactionOn(t *testing.T, c *sqlstreams.Client) {
	const stream = "c15-alter-compact-on"
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatalf("create: %v", err)
	}
	p := producer[EventV1](t, c, stream)
	early := consumer[EventV1](t, c, stream, "early", nil)
	var heads []int64
	produceV1(t, p, 2, sqlstreams.Key("a"))
	heads = append(heads, produceV1(t, p, 1, sqlstreams.Key("a"))...)
	produceV1(t, p, 1, sqlstreams.Key("b"), sqlstreams.CompactionRank(1))
	produceV1(t, p, 1) // keyless
	heads = append(heads, produceV1(t, p, 1, sqlstreams.Key("b"), sqlstreams.CompactionRank(2))...)
	on := true
	if info := alter(t, c, stream, sqlstreams.StreamChanges{Compacted: &on}); !info.Compacted {
		t.Fatalf("Alter returned %+v; want compacted", info)
	}
	health, err := c.Stream[EventV1](stream).Health(ctx(t))
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	if got := headsAt(health, 1); got != 2 {
		t.Errorf("right after compaction was switched on, health counts %d heads; want 2", got)
	}
	if got := idsOf(drain(t, early)); !slices.Equal(sorted(got), heads) {
		t.Errorf("a group made before the change claims %v; want only the heads %v", got, heads)
	}
	if _, err := p.Produce(ctx(t), EventV1{Seq: 9}); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
		t.Errorf("a keyless produce by a producer made before compaction was switched on: %v; want ErrInvalidMessage", err)
	}
	if rep := maintain(t, c); rep.Compacted != 4 {
		t.Errorf("maintenance compacted %d rows; want the 4 that are not heads (superseded and keyless)", rep.Compacted)
	}
	if got := sorted(retainedIDs(t, c, stream, "late")); !slices.Equal(got, heads) {
		t.Errorf("after maintenance the log holds %v; want the heads %v", got, heads)
	}
	// Heads move on with new rows as on any compacted stream.
	newA := produceV1(t, p, 1, sqlstreams.Key("a"))
	maintain(t, c)
	if got := sorted(retainedIDs(t, c, stream, "later")); !slices.Equal(got, []int64{heads[1], newA[0]}) {
		t.Errorf("after a new head of a and maintenance the log holds %v; want %v", got, []int64{heads[1], newA[0]})
	}
}

// Compaction switched off: every row is claimable and kept from now on,
// also rows a head had superseded before.
func testAlterCompactionOff(t *testing.T, c *sqlstreams.Client) {
	const stream = "c15-alter-compact-off"
	createCompacted(t, c, stream, 1)
	p := producer[EventV1](t, c, stream)
	ids := produceV1(t, p, 3, sqlstreams.Key("a"))
	off := false
	if info := alter(t, c, stream, sqlstreams.StreamChanges{Compacted: &off}); info.Compacted {
		t.Fatalf("Alter returned %+v; want not compacted", info)
	}
	ids = append(ids, produceV1(t, p, 1)...) // keyless, now allowed
	ids = append(ids, produceV1(t, p, 1, sqlstreams.Key("a"))...)
	if rep := maintain(t, c); rep.Compacted != 0 {
		t.Errorf("maintenance compacted %d rows of a stream no longer compacted", rep.Compacted)
	}
	if got := retainedIDs(t, c, stream, "all"); !slices.Equal(got, ids) {
		t.Errorf("a new group claims %v; want every row %v", got, ids)
	}
	health, err := c.Stream[EventV1](stream).Health(ctx(t))
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	if got := headsAt(health, 1); got != 0 {
		t.Errorf("health counts %d heads on a stream no longer compacted; want 0", got)
	}
}

func sorted(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// Partitions added: existing groups get cursors at the new partitions'
// start; producers and consumers made before the change, in this client
// and in another, use the new count from their next call.
func testAlterPartitions(t *testing.T, h *harness, c *sqlstreams.Client) {
	const stream = "c15-alter-partitions"
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatalf("create: %v", err)
	}
	other := h.client(t) // another process, as far as the stream is concerned
	mine, theirs := producer[EventV1](t, c, stream), producer[EventV1](t, other, stream)
	g := consumer[EventV1](t, other, stream, "g", nil)
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	before := map[int64]bool{}
	for _, k := range keys {
		before[produceV1(t, mine, 1, sqlstreams.Key(k))[0]] = true
	}
	info := alter(t, c, stream, sqlstreams.StreamChanges{Partitions: 4})
	if info.Partitions != 4 {
		t.Fatalf("Alter returned %d partitions; want 4", info.Partitions)
	}
	for _, k := range keys {
		produceV1(t, mine, 1, sqlstreams.Key(k))
		produceV1(t, theirs, 1, sqlstreams.Key(k))
	}
	if got := theirs.Stream().Partitions; got != 4 {
		t.Errorf("the other client's producer plans with %d partitions after its first produce; want 4", got)
	}
	got := drain(t, g)
	if len(got) != 3*len(keys) {
		t.Fatalf("the other client's group, made before the change, claimed %d rows; want %d", len(got), 3*len(keys))
	}
	moved := 0
	for _, d := range got {
		want := sqlstreams.PartitionForKey(d.Key, 4)
		if before[d.ID] {
			want = sqlstreams.PartitionForKey(d.Key, 2)
		}
		if d.Partition != want {
			t.Errorf("row %d of key %s is in partition %d; want %d", d.ID, d.Key, d.Partition, want)
		}
		if d.Partition >= 2 {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no row went to the new partitions: %d keys all hash below 2 of 4?", len(keys))
	}
	health, err := c.Stream[EventV1](stream).Health(ctx(t))
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	if vh, _ := health.Version(1); len(vh.Groups) != 1 || len(vh.Groups[0].Partitions) != 4 {
		t.Errorf("health after Alter: %+v; want one group with 4 partitions", vh.Groups)
	}
}

// Partitions go from 2 to 4 while producers in two clients and an ordered
// Run consumer in a third keep going: nothing is lost, nothing is handled
// twice while its lease holds, every row produced after Alter returned is
// in its key's partition of 4, and per key the rows in one partition are
// handled in the order they were produced (so a key's rows produced after
// the change are handled in order).
func testAlterUnderLoad(t *testing.T, h *harness, c *sqlstreams.Client) {
	const stream, perProducer, keys = "c15-alter-load", 120, 12
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatalf("create: %v", err)
	}
	clients := []*sqlstreams.Client{c, h.client(t)}
	cons := consumer[EventV1](t, h.client(t), stream, "load", &sqlstreams.ConsumerOptions{Ordered: true, Concurrency: 4,
		LeaseDuration: time.Minute}) // no loaded machine lapses it: only a defect hands a row out twice

	type handled struct {
		id        int64
		key       string
		seq       int
		partition int
	}
	var mu sync.Mutex
	var got []handled
	count := map[int64]int{}
	stop := runFor(t, cons, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, handled{id: d.ID, key: d.Key, seq: d.Value.Seq, partition: d.Partition})
		count[d.ID]++
		return nil
	})

	// Each producer writes its own keys (producer i, key k: "p<i>-k<k>")
	// with a sequence number per key, so per-key order is the order of one
	// goroutine's produces.
	type produced struct {
		id         int64
		key        string
		afterAlter bool
	}
	altered := make(chan struct{})
	half := make(chan struct{}, len(clients))
	var pmu sync.Mutex
	var all []produced
	var wg sync.WaitGroup
	for i, cl := range clients {
		p := producer[EventV1](t, cl, stream)
		wg.Go(func() {
			seq := map[string]int{}
			for n := range perProducer {
				if n == perProducer/2 {
					half <- struct{}{}
				}
				after := false
				select {
				case <-altered:
					after = true
				default:
				}
				key := fmt.Sprintf("p%d-k%d", i, n%keys)
				seq[key]++
				id, err := p.Produce(context.Background(), EventV1{Seq: seq[key]}, sqlstreams.Key(key))
				if err != nil {
					t.Errorf("producer %d, message %d: %v", i, n, err)
					return
				}
				pmu.Lock()
				all = append(all, produced{id: id, key: key, afterAlter: after})
				pmu.Unlock()
			}
		})
	}
	for range clients {
		<-half
	}
	alter(t, c, stream, sqlstreams.StreamChanges{Partitions: 4})
	close(altered)
	wg.Wait()
	total := len(clients) * perProducer
	eventually(t, 60*time.Second, "every produced row to be handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(count) >= total
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	where := map[int64]int{}
	for _, hd := range got {
		where[hd.id] = hd.partition
	}
	for _, p := range all {
		if count[p.id] != 1 {
			t.Errorf("row %d of key %s was handled %d times; want once", p.id, p.key, count[p.id])
		}
		if want := sqlstreams.PartitionForKey(p.key, 4); p.afterAlter && where[p.id] != want {
			t.Errorf("row %d of key %s, produced after Alter returned, is in partition %d; want %d of 4", p.id, p.key, where[p.id], want)
		}
	}
	if len(count) != total {
		t.Errorf("handled %d distinct rows; %d were produced", len(count), total)
	}
	// Per key and partition, handled in produce order.
	last := map[string]int{}
	for _, hd := range got {
		k := fmt.Sprintf("%s@%d", hd.key, hd.partition)
		if hd.seq <= last[k] {
			t.Errorf("key %s in partition %d: message %d handled after message %d", hd.key, hd.partition, hd.seq, last[k])
		}
		last[k] = hd.seq
	}
}
