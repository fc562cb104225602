package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C15_StreamAdmin", testStreamAdmin) }

// C15: names are validated (a documented pattern, a length limit) and
// unique. Get returns the config; Rename changes the name only (id, rows,
// groups and cursors stay; the old name is free); Destroy removes the log,
// groups, exceptions and heads. Refused calls write nothing.
func testStreamAdmin(t *testing.T, h *harness) {
	c := h.client(t) // creates the namespace under the parent test
	t.Run("Names", func(t *testing.T) { testStreamNames(t, c) })
	t.Run("CreateGet", func(t *testing.T) { testStreamCreateGet(t, c) })
	t.Run("Rename", func(t *testing.T) { testStreamRename(t, c) })
	t.Run("Destroy", func(t *testing.T) { testStreamDestroy(t, c) })
	t.Run("InvalidOptions", func(t *testing.T) { testStreamInvalidOptions(t, c) })
	t.Run("Closed", func(t *testing.T) { testStreamClosed(t, h) })
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got %v, want %v", what, err, target)
	}
}

func wantNotFound(t testing.TB, c *sqlstreams.Client, stream string) {
	t.Helper()
	if info, err := c.Stream[sqlstreams.RawPayload](stream).Get(ctx(t)); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("Get(%q): %+v, %v; want ErrStreamNotFound", stream, info, err)
	}
}

func testStreamNames(t *testing.T, c *sqlstreams.Client) {
	bad := map[string]string{
		"empty":          "",
		"too long":       strings.Repeat("a", sqlstreams.MaxNameLength+1),
		"SQL":            "x'; DROP TABLE y; --",
		"NUL":            "a\x00b",
		"tab":            "a\tb",
		"C1 control":     "a\u0085b",
		"bidi override":  "a\u202eb",
		"space":          "has space",
		"leading dot":    ".orders",
		"leading dash":   "-orders",
		"slash":          "orders/placed",
		"non-ASCII word": "bestellungen.äöü",
	}
	for what, name := range bad {
		s := c.Stream[sqlstreams.RawPayload](name)
		_, err := s.Create(ctx(t), nil)
		if !errors.Is(err, sqlstreams.ErrInvalidName) {
			t.Errorf("Create with a %s name %q: %v, want ErrInvalidName", what, name, err)
			continue
		}
		if !strings.Contains(err.Error(), sqlstreams.NamePattern) {
			t.Errorf("the error for a %s name does not show the pattern %s: %v", what, sqlstreams.NamePattern, err)
		}
		_, err = s.Get(ctx(t))
		wantErr(t, "Get with a "+what+" name", err, sqlstreams.ErrInvalidName)
		_, err = s.Producer().Register(ctx(t), nil)
		wantErr(t, "producer on a "+what+" name", err, sqlstreams.ErrInvalidName)
		_, err = s.Consumer("g").Register(ctx(t), nil)
		wantErr(t, "consumer on a "+what+" name", err, sqlstreams.ErrInvalidName)
		_, err = c.Stream[sqlstreams.RawPayload]("ok").Consumer(name).Register(ctx(t), nil)
		wantErr(t, "group with a "+what+" name", err, sqlstreams.ErrInvalidName)
	}
	for _, name := range []string{"a", "orders.placed", "A-1_b.c", "7", strings.Repeat("z", sqlstreams.MaxNameLength)} {
		if _, err := c.Stream[sqlstreams.RawPayload](name).Create(ctx(t), nil); err != nil {
			t.Errorf("Create(%q): %v", name, err)
		}
		if info, err := c.Stream[sqlstreams.RawPayload](name).Get(ctx(t)); err != nil || info.Name != name {
			t.Errorf("Get(%q): %+v, %v", name, info, err)
		}
	}
	// Unique: a second Create with the same name fails and changes nothing.
	_, err := c.Stream[EventV1]("orders.placed").Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 4})
	wantErr(t, "second Create of orders.placed", err, sqlstreams.ErrStreamExists)
	if info, _ := c.Stream[sqlstreams.RawPayload]("orders.placed").Get(ctx(t)); info.Partitions != 1 {
		t.Errorf("a refused Create changed the stream: %+v", info)
	}
}

func testStreamCreateGet(t *testing.T, c *sqlstreams.Client) {
	opts := &sqlstreams.StreamOptions{Partitions: 3, Compacted: true,
		Retention: sqlstreams.Retention{MaxAge: 36 * time.Hour, MaxRows: 1000, Hard: true}}
	before := time.Now()
	created, err := c.Stream[EventV1]("c15-config").Create(ctx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Stream[sqlstreams.RawPayload]("c15-config").Get(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.ID == 0 || info.ID != created.ID || info.Name != "c15-config" || info.Partitions != 3 || !info.Compacted ||
		info.Retention != opts.Retention {
		t.Errorf("Get returned %+v; want id %d and the options %+v", info, created.ID, *opts)
	}
	if info.CreatedAt.Before(before.Add(-time.Second)) || info.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt %v is not the creation time (about %v)", info.CreatedAt, before)
	}
	// A stream created by registering a producer has the defaults.
	producer[EventV1](t, c, "c15-default")
	info, err = c.Stream[EventV2]("c15-default").Get(ctx(t))
	if err != nil || info.Partitions != 1 || info.Compacted || info.Retention != (sqlstreams.Retention{}) {
		t.Errorf("Get of a default stream: %+v, %v; want 1 partition, not compacted, kept forever", info, err)
	}
	wantNotFound(t, c, "c15-never-made")
}

func testStreamRename(t *testing.T, c *sqlstreams.Client) {
	const oldName, newName = "c15-orders", "c15-renamed"
	if _, err := c.Stream[sqlstreams.RawPayload](oldName).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := producer[EventV1](t, c, oldName)
	ids := produceV1(t, p, 4, sqlstreams.Key("k"))
	g := consumer[EventV1](t, c, oldName, "g", nil)
	first := claimN(t, g, 2)
	if err := g.Ack(ctx(t), first...); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Stream[sqlstreams.RawPayload](oldName).Get(ctx(t))

	if err := c.Stream[EventV2](oldName).Rename(ctx(t), newName); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	after, err := c.Stream[sqlstreams.RawPayload](newName).Get(ctx(t))
	if err != nil {
		t.Fatalf("Get by the new name: %v", err)
	}
	if after.ID != before.ID || after.Name != newName || after.Partitions != before.Partitions || after.Compacted != before.Compacted ||
		after.Retention != before.Retention || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("after Rename Get returns %+v, want %+v with only the name changed", after, before)
	}
	wantNotFound(t, c, oldName)
	hl := health(t, c, newName)
	if rowsAt(hl, 1) != 4 {
		t.Errorf("renamed stream has %d rows, want 4", rowsAt(hl, 1))
	}
	if gh := groupAt(t, hl, 1, "g"); gh.Unread != 2 {
		t.Errorf("group g on the renamed stream has %d unread, want 2", gh.Unread)
	}
	// The group and its cursor came along: it continues where it stopped.
	g2 := consumer[EventV1](t, c, newName, "g", nil)
	if got := idsOf(drain(t, g2)); !equalIDs(got, ids[2:]) {
		t.Errorf("group g resumed on the new name with %v, want %v", got, ids[2:])
	}
	// The group is still bound to v1.
	if _, err := c.Stream[EventV2](newName).Consumer("g").Register(ctx(t), nil); !errors.Is(err, sqlstreams.ErrGroupVersion) {
		t.Errorf("registering g at v2 after the rename: %v, want ErrGroupVersion", err)
	}
	// A producer made with the old name keeps writing to the stream it resolved.
	id, err := p.Produce(ctx(t), EventV1{Seq: 5})
	if err != nil {
		t.Fatalf("produce through a producer made before the rename: %v", err)
	}
	if got := idsOf(drain(t, g2)); !equalIDs(got, []int64{id}) {
		t.Errorf("group got %v after a produce through the old producer, want [%d]", got, id)
	}

	// The old name is free for a new, empty stream.
	fresh, err := c.Stream[sqlstreams.RawPayload](oldName).Create(ctx(t), nil)
	if err != nil {
		t.Fatalf("Create with the freed name: %v", err)
	}
	if fresh.ID == before.ID {
		t.Errorf("the new stream %q reuses the renamed stream's id %d", oldName, fresh.ID)
	}
	if hl := health(t, c, oldName); hl.HighWater != 0 || len(hl.Versions) != 0 {
		t.Errorf("a new stream under the freed name is not empty: %+v", hl)
	}

	// Renaming onto a taken name, to an invalid name, or a missing stream.
	wantErr(t, "Rename onto a taken name", c.Stream[sqlstreams.RawPayload](oldName).Rename(ctx(t), newName), sqlstreams.ErrStreamExists)
	if info, _ := c.Stream[sqlstreams.RawPayload](newName).Get(ctx(t)); info.ID != before.ID {
		t.Errorf("a refused Rename moved %q to stream %d, want %d", newName, info.ID, before.ID)
	}
	if info, _ := c.Stream[sqlstreams.RawPayload](oldName).Get(ctx(t)); info.ID != fresh.ID {
		t.Errorf("a refused Rename moved %q to stream %d, want %d", oldName, info.ID, fresh.ID)
	}
	err = c.Stream[sqlstreams.RawPayload](newName).Rename(ctx(t), "x'; DROP TABLE y; --")
	wantErr(t, "Rename to an invalid name", err, sqlstreams.ErrInvalidName)
	wantErr(t, "Rename of a missing stream", c.Stream[sqlstreams.RawPayload]("c15-missing").Rename(ctx(t), "c15-other"), sqlstreams.ErrStreamNotFound)
	wantNotFound(t, c, "c15-other")
}

func testStreamDestroy(t *testing.T, c *sqlstreams.Client) {
	const name = "c15-doomed"
	createCompacted(t, c, name, 1)
	ps := newC11Producers(t, c, name)
	for i, k := range []string{"a", "b", "c"} {
		ps.write(t, k, c11Write{2, 0}, i)
	}
	opts := fastRetry(sqlstreams.ConsumerOptions{LeaseDuration: settleLease})
	g := consumer[EventV2](t, c, name, "g", opts)
	ds := claimN(t, g, 2)
	if len(ds) != 2 {
		t.Fatalf("claimed %d, want 2", len(ds))
	}
	if err := ds[0].Dead(ctx(t), errTest); err != nil { // a dead letter
		t.Fatal(err)
	}
	// ds[1] stays leased.
	old, _ := c.Stream[sqlstreams.RawPayload](name).Get(ctx(t))

	if err := c.Stream[EventV1](name).Destroy(ctx(t)); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	wantNotFound(t, c, name)
	wantErr(t, "Destroy of a destroyed stream", c.Stream[sqlstreams.RawPayload](name).Destroy(ctx(t)), sqlstreams.ErrStreamNotFound)
	_, err := c.Stream[sqlstreams.RawPayload](name).Health(ctx(t))
	wantErr(t, "Health of a destroyed stream", err, sqlstreams.ErrStreamNotFound)

	// A new stream with the same name starts empty: no rows, heads, groups
	// or exceptions of the old one.
	fresh, err := c.Stream[sqlstreams.RawPayload](name).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true})
	if err != nil {
		t.Fatalf("Create after Destroy: %v", err)
	}
	if fresh.ID == old.ID {
		t.Errorf("the new stream reuses the destroyed stream's id %d", old.ID)
	}
	hl := health(t, c, name)
	if hl.HighWater != 0 || len(hl.Versions) != 0 {
		t.Errorf("new stream after Destroy is not empty: %+v", hl)
	}
	// Group g is gone: it may now be created at another version.
	g1 := consumer[EventV1](t, c, name, "g", opts)
	if dead, err := g1.DeadLetters(ctx(t), 0, 10); err != nil || len(dead) != 0 {
		t.Errorf("dead letters after Destroy: %v, %v; want none", dead, err)
	}
	ps = newC11Producers(t, c, name)
	id := ps.write(t, "a", c11Write{1, -5}, 100) // would lose to the old v2 head of "a"
	hl = health(t, c, name)
	if headsAt(hl, 1) != 1 || headsAt(hl, 2) != 0 {
		t.Errorf("heads after Destroy and a new write: v1 %d, v2 %d; want 1 and 0", headsAt(hl, 1), headsAt(hl, 2))
	}
	// The old group's lease would be due by now: nothing of it comes back.
	time.Sleep(time.Until(ds[1].LeaseExpires()) + 20*time.Millisecond)
	if got := idsOf(drain(t, g1)); !equalIDs(got, []int64{id}) {
		t.Errorf("new group drained %v, want only the new row [%d]", got, id)
	}
}

func testStreamInvalidOptions(t *testing.T, c *sqlstreams.Client) {
	bad := map[string]*sqlstreams.StreamOptions{
		"negative partitions": {Partitions: -1},
		"too many partitions": {Partitions: sqlstreams.MaxPartitions + 1},
		"negative max age":    {Retention: sqlstreams.Retention{MaxAge: -time.Second}},
		"negative max rows":   {Retention: sqlstreams.Retention{MaxRows: -1}},
	}
	for what, opts := range bad {
		_, err := c.Stream[sqlstreams.RawPayload]("c15-bad").Create(ctx(t), opts)
		wantErr(t, "Create with "+what, err, sqlstreams.ErrInvalidOption)
		wantNotFound(t, c, "c15-bad")
	}
	badConsumer := map[string]sqlstreams.ConsumerOptions{
		"negative MaxAttempts":   {MaxAttempts: -1},
		"negative Concurrency":   {Concurrency: -1},
		"negative LeaseDuration": {LeaseDuration: -time.Second},
		"negative PollInterval":  {PollInterval: -time.Second},
	}
	for what, opts := range badConsumer {
		_, err := c.Stream[EventV1]("c15-bad-group").Consumer("g").Register(ctx(t), &opts)
		wantErr(t, "consumer with "+what, err, sqlstreams.ErrInvalidOption)
		wantNotFound(t, c, "c15-bad-group")
	}
}

func testStreamClosed(t *testing.T, h *harness) {
	c := h.client(t)
	p := producer[EventV1](t, c, "c15-closed")
	g := consumer[EventV1](t, c, "c15-closed", "g", nil)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s := c.Stream[EventV1]("c15-closed")
	_, err := s.Create(ctx(t), nil)
	wantErr(t, "Create on a closed client", err, sqlstreams.ErrClosed)
	_, err = c.Stream[EventV1]("c15-closed-new").Create(ctx(t), nil)
	wantErr(t, "Create of a new stream on a closed client", err, sqlstreams.ErrClosed)
	_, err = s.Get(ctx(t))
	wantErr(t, "Get on a closed client", err, sqlstreams.ErrClosed)
	wantErr(t, "Rename on a closed client", s.Rename(ctx(t), "c15-elsewhere"), sqlstreams.ErrClosed)
	wantErr(t, "Destroy on a closed client", s.Destroy(ctx(t)), sqlstreams.ErrClosed)
	_, err = s.Health(ctx(t))
	wantErr(t, "Health on a closed client", err, sqlstreams.ErrClosed)
	_, err = s.Producer().Register(ctx(t), nil)
	wantErr(t, "producer Register on a closed client", err, sqlstreams.ErrClosed)
	_, err = s.Consumer("g2").Register(ctx(t), nil)
	wantErr(t, "consumer Register on a closed client", err, sqlstreams.ErrClosed)
	_, err = p.Produce(ctx(t), EventV1{Seq: 1})
	wantErr(t, "Produce on a closed client", err, sqlstreams.ErrClosed)
	_, err = g.Claim(ctx(t), 1)
	wantErr(t, "Claim on a closed client", err, sqlstreams.ErrClosed)
	_, err = c.Maintain(ctx(t))
	wantErr(t, "Maintain on a closed client", err, sqlstreams.ErrClosed)
	wantErr(t, "second Close", c.Close(), sqlstreams.ErrClosed)

	// Nothing changed: another client sees the stream as it was.
	other := h.client(t)
	if info, err := other.Stream[sqlstreams.RawPayload]("c15-closed").Get(ctx(t)); err != nil || info.Name != "c15-closed" {
		t.Errorf("Get through another client: %+v, %v", info, err)
	}
	wantNotFound(t, other, "c15-closed-new")
	wantNotFound(t, other, "c15-elsewhere")
}
