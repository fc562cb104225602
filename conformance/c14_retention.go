package conformance

import (
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C14_Retention", testRetention) }

// C14: age and row-count limits per stream, shared by all versions, enforced
// by Client.Maintain. By default retention removes only rows every group has
// passed and that have no unresolved exception, so nothing unread is lost; a
// hard limit removes regardless, and Health counts per group what it removed
// unread.
//
// Maintain works on every stream of a namespace, so each case gets its own.
func testRetention(t *testing.T, h *harness) {
	fresh := func(t *testing.T) *sqlstreams.Client { return (&harness{target: h.target}).client(t) }
	t.Run("SoftRows", func(t *testing.T) { testRetentionSoftRows(t, fresh(t)) })
	t.Run("SoftAge", func(t *testing.T) { testRetentionSoftAge(t, fresh(t)) })
	t.Run("Hard", func(t *testing.T) { testRetentionHard(t, fresh(t)) })
}

func createWithRetention(t testing.TB, c *sqlstreams.Client, stream string, r sqlstreams.Retention) {
	t.Helper()
	if _, err := c.Stream[sqlstreams.RawPayload](stream).Create(ctx(t), &sqlstreams.StreamOptions{Retention: r}); err != nil {
		t.Fatalf("create %q with retention %+v: %v", stream, r, err)
	}
}

// produceLayout appends one row per entry at its version and routing key
// and returns the ids.
func produceLayout(t testing.TB, c *sqlstreams.Client, stream string, versions []int, routing []string) []int64 {
	t.Helper()
	p1 := producer[EventV1](t, c, stream)
	p2 := producer[EventV2](t, c, stream)
	ids := make([]int64, len(versions))
	for i, v := range versions {
		var opts []sqlstreams.ProduceOption
		if routing != nil {
			opts = append(opts, sqlstreams.RoutingKey(routing[i]))
		}
		var err error
		if v == 1 {
			ids[i], err = p1.Produce(ctx(t), EventV1{Seq: i}, opts...)
		} else {
			ids[i], err = p2.Produce(ctx(t), EventV2{Seq: i}, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func maintain(t testing.TB, c *sqlstreams.Client) sqlstreams.MaintenanceReport {
	t.Helper()
	rep, err := c.Maintain(ctx(t))
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	return rep
}

// retainedIDs lists the ids left in the log, read by a new RawPayload group.
func retainedIDs(t testing.TB, c *sqlstreams.Client, stream, group string) []int64 {
	t.Helper()
	return idsOf(drain(t, consumer[sqlstreams.RawPayload](t, c, stream, group, nil)))
}

func testRetentionSoftRows(t *testing.T, c *sqlstreams.Client) {
	const stream = "c14-rows"
	createWithRetention(t, c, stream, sqlstreams.Retention{MaxRows: 3})
	gA := consumer[EventV1](t, c, stream, "gA", nil)
	gB := consumer[EventV2](t, c, stream, "gB", nil)
	// r4 is a v2 row right after r3, so gB's cursor after claiming r1 and r3
	// is exactly r3.
	r := produceLayout(t, c, stream, []int{1, 2, 1, 2, 2, 1, 1, 2}, nil)

	// 8 rows, limit 3: r0..r4 are over the limit, but no group has read them.
	if rep := maintain(t, c); rep.Retained != 0 {
		t.Fatalf("Maintain removed %d rows nobody had read, want 0", rep.Retained)
	}
	if n := len(drain(t, gA)); n != 4 {
		t.Fatalf("gA drained %d v1 rows, want 4", n)
	}
	if rep := maintain(t, c); rep.Retained != 0 {
		t.Fatalf("Maintain removed %d rows gB has not passed, want 0", rep.Retained)
	}
	ds := claimN(t, gB, 2)
	if !equalIDs(idsOf(ds), []int64{r[1], r[3]}) {
		t.Fatalf("gB claimed %v, want %v", idsOf(ds), []int64{r[1], r[3]})
	}
	if err := ds[0].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].Retry(ctx(t), time.Hour, errTest); err != nil {
		t.Fatal(err)
	}
	// Every group has passed r0..r3; r3 has an unresolved exception. The
	// limit counts rows of both versions.
	rep := maintain(t, c)
	if rep.Retained != 3 || rep.RemovedUnread != 0 {
		t.Errorf("Maintain: retained %d, removed unread %d; want r0, r1, r2 removed, none unread", rep.Retained, rep.RemovedUnread)
	}
	hl := health(t, c, stream)
	if v1, v2 := rowsAt(hl, 1), rowsAt(hl, 2); v1 != 2 || v2 != 3 {
		t.Errorf("rows left: v1 %d, v2 %d; want 2 (r5, r6) and 3 (r3, r4, r7)", v1, v2)
	}
	gh := groupAt(t, hl, 2, "gB")
	if gh.Unread != 2 || gh.Delayed != 1 || gh.RemovedUnread != 0 {
		t.Errorf("gB after soft retention: %+v; want 2 unread, 1 delayed, nothing removed unread", gh)
	}
	if gh := groupAt(t, hl, 1, "gA"); gh.RemovedUnread != 0 {
		t.Errorf("gA removed unread %d, want 0", gh.RemovedUnread)
	}
	// Nothing unread was lost.
	if got := idsOf(drain(t, gB)); !equalIDs(got, []int64{r[4], r[7]}) {
		t.Errorf("gB drained %v, want %v", got, []int64{r[4], r[7]})
	}
	// Now r4 is passed by all; r3 still has its exception and stays,
	// although the log is then over its limit.
	if rep := maintain(t, c); rep.Retained != 1 {
		t.Errorf("second Maintain removed %d rows, want 1 (r4)", rep.Retained)
	}
	if got := retainedIDs(t, c, stream, "audit"); !equalIDs(got, []int64{r[3], r[5], r[6], r[7]}) {
		t.Errorf("log holds %v, want %v", got, []int64{r[3], r[5], r[6], r[7]})
	}
}

func testRetentionSoftAge(t *testing.T, c *sqlstreams.Client) {
	const stream = "c14-age"
	// The young row must stay under maxAge until the last Maintain: keep
	// the margin wide for slow, loaded machines.
	const maxAge = time.Second
	createWithRetention(t, c, stream, sqlstreams.Retention{MaxAge: maxAge})
	gA := consumer[EventV1](t, c, stream, "gA", nil)
	gB := consumer[EventV2](t, c, stream, "gB", nil)
	old := produceLayout(t, c, stream, []int{1, 2, 1}, nil)
	drain(t, gA)
	time.Sleep(maxAge + 50*time.Millisecond)
	young := produceLayout(t, c, stream, []int{2}, nil)

	// The old rows are past the age limit, but gB has not passed them.
	if rep := maintain(t, c); rep.Retained != 0 {
		t.Fatalf("Maintain removed %d rows gB has not passed, want 0", rep.Retained)
	}
	if got := idsOf(drain(t, gB)); !equalIDs(got, []int64{old[1], young[0]}) {
		t.Fatalf("gB drained %v, want %v", got, []int64{old[1], young[0]})
	}
	// Now every group has passed the old rows; the young one stays.
	if rep := maintain(t, c); rep.Retained != 3 {
		t.Errorf("Maintain removed %d rows, want the 3 old ones", rep.Retained)
	}
	hl := health(t, c, stream)
	if v1, v2 := rowsAt(hl, 1), rowsAt(hl, 2); v1 != 0 || v2 != 1 {
		t.Errorf("rows left: v1 %d, v2 %d; want 0 and 1", v1, v2)
	}
}

func testRetentionHard(t *testing.T, c *sqlstreams.Client) {
	const stream = "c14-hard"
	createWithRetention(t, c, stream, sqlstreams.Retention{MaxRows: 2, Hard: true})
	gA := consumer[EventV1](t, c, stream, "gA", nil)
	gB := consumer[EventV1](t, c, stream, "gB", &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
	gC := consumer[EventV2](t, c, stream, "gC", nil)
	gD := consumer[EventV1](t, c, stream, "gD", nil)
	r := produceLayout(t, c, stream, []int{1, 1, 2, 1, 1, 1}, []string{"eu", "us", "eu", "eu.web", "eu", "us"})
	// r0..r3 are over the limit of 2.
	held := claimN(t, gA, 1) // gA holds r0; r1 and r3 are unread
	if !equalIDs(idsOf(held), []int64{r[0]}) {
		t.Fatalf("gA claimed %v, want [%d]", idsOf(held), r[0])
	}
	drain(t, gD) // gD resolved everything: it loses nothing

	rep := maintain(t, c)
	wantUnread := map[string]int64{"gA": 3, "gB": 2, "gC": 1, "gD": 0} // gB reads eu.# only; gC reads v2
	if rep.Retained != 4 || rep.RemovedUnread != 3+2+1 {
		t.Errorf("Maintain: retained %d, removed unread %d; want 4 and 6", rep.Retained, rep.RemovedUnread)
	}
	hl := health(t, c, stream)
	if v1, v2 := rowsAt(hl, 1), rowsAt(hl, 2); v1 != 2 || v2 != 0 {
		t.Errorf("rows left: v1 %d, v2 %d; want 2 and 0", v1, v2)
	}
	for g, n := range wantUnread {
		v := 1
		if g == "gC" {
			v = 2
		}
		if got := groupAt(t, hl, v, g).RemovedUnread; got != n {
			t.Errorf("group %s: health counts %d removed unread, want %d", g, got, n)
		}
	}
	if gh := groupAt(t, hl, 1, "gA"); gh.Leased != 0 || gh.Unread != 2 {
		t.Errorf("gA after hard retention: %+v; want its lease gone with the row and 2 unread (r4, r5)", gh)
	}
	// The rows within the limit are still delivered.
	if got := idsOf(drain(t, gA)); !equalIDs(got, []int64{r[4], r[5]}) {
		t.Errorf("gA drained %v, want %v", got, []int64{r[4], r[5]})
	}
	if got := idsOf(drain(t, gB)); !equalIDs(got, []int64{r[4]}) {
		t.Errorf("gB drained %v, want [%d]", got, r[4])
	}
	if got := idsOf(drain(t, gC)); len(got) != 0 {
		t.Errorf("gC drained %v, want nothing", got)
	}
}
