package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C23_Samples", testSamples) }

// C23 Samples: maintenance stores one sample of each stream's figures per
// sample interval, one per bucket however many clients maintain the
// database; samples are listed from a time, oldest first and at most a
// limit (the newest); maintenance prunes those older than the retention and
// those of streams that are gone; Stream.History derives rates from
// consecutive samples. A driver without driver.SampleStore answers
// ErrUnsupported.
func testSamples(t *testing.T, h *harness) {
	probe := h.client(t)
	store, ok := probe.Driver().(driver.SampleStore)
	if !ok {
		if _, err := probe.Stream[EventV1]("samples").History(ctx(t), time.Time{}); !errors.Is(err, sqlstreams.ErrUnsupported) {
			t.Fatalf("History on a driver without samples: %v; want ErrUnsupported", err)
		}
		return
	}
	t.Run("OnePerBucket", func(t *testing.T) { testSamplesOnePerBucket(t, h) })
	t.Run("ListAndPrune", func(t *testing.T) { testSamplesListAndPrune(t, h, probe, store) })
	t.Run("History", func(t *testing.T) { testSamplesHistory(t, h) })
}

// Two clients maintaining one database store one sample per stream per
// bucket between them.
func testSamplesOnePerBucket(t *testing.T, h *harness) {
	const every = time.Hour
	a := h.client(t, sqlstreams.WithSampleInterval(every))
	b := h.client(t, sqlstreams.WithSampleInterval(every))
	consumer[EventV1](t, a, "samples.shared", "billing", nil)
	id := streamID(t, a, "samples.shared")
	store := a.Driver().(driver.SampleStore)
	for range 3 { // an hour may turn between the two passes; try again then
		bucket := time.Now().UTC().Truncate(every)
		ra, errA := a.Maintain(ctx(t))
		rb, errB := b.Maintain(ctx(t))
		if errA != nil || errB != nil {
			t.Fatalf("maintain: %v, %v", errA, errB)
		}
		if !time.Now().UTC().Truncate(every).Equal(bucket) {
			continue
		}
		samples, err := store.ListSamples(ctx(t), driver.ListSamplesParams{StreamID: id, Since: bucket, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 || !samples[0].At.Equal(bucket) || ra.Sampled+rb.Sampled > 1 {
			t.Fatalf("samples of the bucket %v: %+v; the clients stored %d and %d; want one sample at the bucket", bucket, samples, ra.Sampled, rb.Sampled)
		}
		return
	}
	t.Fatal("the hour turned between every pair of passes")
}

// Listing from a time, the newest within a limit, and pruning by age and of
// streams that are gone.
func testSamplesListAndPrune(t *testing.T, h *harness, probe *sqlstreams.Client, store driver.SampleStore) {
	consumer[EventV1](t, probe, "samples.kept", "billing", nil)
	id := streamID(t, probe, "samples.kept")
	// Ten samples a minute apart, two days old, then one now.
	t0 := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Minute)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	for i := range 10 {
		ok, err := store.RecordSample(ctx(t), driver.RecordSampleParams{Sample: driver.Sample{StreamID: id, At: at(i), Figures: fmt.Sprintf(`{"high_water": %d}`, i)}})
		if err != nil || !ok {
			t.Fatalf("record sample %d: %v, %v; want stored", i, ok, err)
		}
	}
	again, err := store.RecordSample(ctx(t), driver.RecordSampleParams{Sample: driver.Sample{StreamID: id, At: at(3), Figures: `{"high_water": 99}`}})
	if err != nil || again {
		t.Fatalf("a second sample of a bucket: stored %v, %v; want nothing stored", again, err)
	}
	list := func(since time.Time, limit int) []int {
		t.Helper()
		samples, err := store.ListSamples(ctx(t), driver.ListSamplesParams{StreamID: id, Since: since, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var minutes []int
		for _, s := range samples {
			if s.StreamID != id {
				t.Errorf("sample of stream %d listed for %d", s.StreamID, id)
			}
			minutes = append(minutes, int(s.At.Sub(t0)/time.Minute))
		}
		return minutes
	}
	for _, tc := range []struct {
		since time.Time
		limit int
		want  string
	}{
		{at(5), 100, "[5 6 7 8 9]"},
		{at(0), 3, "[7 8 9]"},
		{at(9).Add(time.Second), 10, "[]"},
	} {
		if got := fmt.Sprint(list(tc.since, tc.limit)); got != tc.want {
			t.Errorf("samples since minute %v, limit %d: %s; want %s", tc.since.Sub(t0), tc.limit, got, tc.want)
		}
	}
	// The stored document reads back as written, as JSON (PostgreSQL may
	// respace it).
	samples, err := store.ListSamples(ctx(t), driver.ListSamplesParams{StreamID: id, Since: at(3), Limit: 1})
	if err != nil || len(samples) != 1 {
		t.Fatalf("the newest sample: %v, %v", samples, err)
	}
	var doc struct {
		HighWater int `json:"high_water"`
	}
	if err := json.Unmarshal([]byte(samples[0].Figures), &doc); err != nil || doc.HighWater != 9 {
		t.Errorf("the newest sample's figures %q (%v); want those written at minute 9", samples[0].Figures, err)
	}

	// A stream that is gone loses its samples at the next prune, however new.
	consumer[EventV1](t, probe, "samples.gone", "billing", nil)
	gone := streamID(t, probe, "samples.gone")
	if _, err := store.RecordSample(ctx(t), driver.RecordSampleParams{Sample: driver.Sample{StreamID: gone, At: time.Now().UTC().Truncate(time.Microsecond), Figures: `{}`}}); err != nil {
		t.Fatal(err)
	}
	if err := probe.Stream[EventV1]("samples.gone").Destroy(ctx(t)); err != nil {
		t.Fatal(err)
	}
	n, err := store.PruneSamples(ctx(t), driver.PruneSamplesParams{Before: at(2)})
	if err != nil || n != 3 {
		t.Fatalf("pruned %d samples, %v; want minutes 0 and 1 and the gone stream's", n, err)
	}
	if got := fmt.Sprint(list(at(0), 100)); got != "[2 3 4 5 6 7 8 9]" {
		t.Errorf("after the prune: %s; want minutes 2 to 9", got)
	}
	// Maintenance prunes what is older than the retention (a day).
	rep, err := probe.Maintain(ctx(t))
	if err != nil || rep.Samples != 8 {
		t.Fatalf("maintenance removed %d samples, %v; want the 8 older than a day", rep.Samples, err)
	}
}

// History: rates from consecutive samples, as the producer and the consumer
// moved between them.
func testSamplesHistory(t *testing.T, h *harness) {
	c := h.client(t, sqlstreams.WithSampleInterval(time.Millisecond))
	billing := consumer[EventV1](t, c, "samples.history", "billing", nil)
	p := producer[EventV1](t, c, "samples.history")
	sample := func() {
		t.Helper()
		eventually(t, 30*time.Second, "a sample of a new bucket", func() bool {
			rep, err := c.Maintain(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			return rep.Sampled > 0
		})
	}
	sample()
	produceV1(t, p, 5)
	ds, err := billing.Claim(ctx(t), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	if err := billing.Ack(ctx(t), ds...); err != nil {
		t.Fatal(err)
	}
	sample()
	points, err := c.Stream[EventV1]("samples.history").History(ctx(t), time.Now().Add(-time.Hour))
	if err != nil || len(points) != 1 {
		t.Fatalf("history: %+v, %v; want one point after the first sample", points, err)
	}
	pt := points[0]
	rows := func(rate float64) int64 { return int64(rate*pt.Span.Seconds() + 0.5) }
	if pt.HighWater < 5 || rows(pt.ProduceRate) != pt.HighWater || pt.Span <= 0 {
		t.Errorf("point %+v; want the 5 ids produced over a positive span", pt)
	}
	// Rates count ids: rows where ids are consecutive, more under stepped
	// ids (Galera), so the consume rate is bounded, not exact.
	if len(pt.Groups) != 1 || pt.Groups[0].Group != "billing" || pt.Groups[0].Unread != 3 || pt.Groups[0].ConsumeRate <= 0 ||
		pt.Groups[0].ConsumeRate > pt.ProduceRate || (pt.HighWater == 5 && rows(pt.Groups[0].ConsumeRate) != 2) {
		t.Errorf("groups %+v; want billing with 3 unread after settling 2 (a consume rate of 2 rows over the span with consecutive ids)", pt.Groups)
	}
	if len(pt.Versions) != 1 || pt.Versions[0].Rows != 5 || rows(pt.Versions[0].RowsRate) != 5 {
		t.Errorf("versions %+v; want v1 with 5 rows, all new", pt.Versions)
	}
}

// streamID reads a stream's id from the driver.
func streamID(t *testing.T, c *sqlstreams.Client, name string) int64 {
	t.Helper()
	cfg, err := c.Driver().LookupStream(ctx(t), driver.LookupStreamParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ID
}
