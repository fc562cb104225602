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
)

func init() { register("R7_Converters", testConverters) }

// v1ToV2 converts the way a real converter would: cents stay cents.
func v1ToV2(_ context.Context, old EventV1) (EventV2, error) {
	return EventV2{Seq: old.Seq, Total: Money{Cents: old.Total, Currency: "USD"}}, nil
}

// R7: a group may declare converters from older versions to its type; it
// then also claims those versions and hands its handler converted values,
// and health counts those rows under the group. A converter's error is a
// delivery error (retried with backoff, dead after MaxAttempts); a payload
// that does not decode as the old type goes dead at once.
func testConverters(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "r7"
	p1 := producer[EventV1](t, c, stream)
	p2 := producer[EventV2](t, c, stream)
	v1 := map[int64]EventV1{}
	v2 := map[int64]EventV2{}
	for i := range 3 {
		e1 := EventV1{Seq: 10 + i, Total: int64(100 + i)}
		id, err := p1.Produce(ctx(t), e1)
		if err != nil {
			t.Fatal(err)
		}
		v1[id] = e1
		e2 := EventV2{Seq: 20 + i, Total: Money{Cents: int64(200 + i), Currency: "EUR"}}
		if i < 2 {
			if id, err = p2.Produce(ctx(t), e2); err != nil {
				t.Fatal(err)
			}
			v2[id] = e2
		}
	}
	conv := sqlstreams.ConvertFrom[EventV1, EventV2](v1ToV2)
	g := consumer[EventV2](t, c, stream, "g", &sqlstreams.ConsumerOptions{Converters: []sqlstreams.Converter{conv}})
	plain := consumer[EventV2](t, c, stream, "plain", nil)

	// Health counts the converted version's rows under the group.
	hl := health(t, c, stream)
	if gh := groupAt(t, hl, 1, "g"); gh.Unread != 3 {
		t.Errorf("health counts %d unread v1 rows for the converting group, want 3", gh.Unread)
	}
	if gh := groupAt(t, hl, 2, "g"); gh.Unread != 2 {
		t.Errorf("health counts %d unread v2 rows for the converting group, want 2", gh.Unread)
	}

	got := drain(t, g)
	if len(got) != 5 {
		t.Fatalf("the converting group got %d rows, want 3 converted v1 rows and 2 v2 rows", len(got))
	}
	for _, d := range got {
		switch d.SchemaVersion {
		case 1:
			want, _ := v1ToV2(context.Background(), v1[d.ID])
			if d.Value != want {
				t.Errorf("v1 row %d handed over as %+v, want the converted %+v", d.ID, d.Value, want)
			}
		case 2:
			if d.Value != v2[d.ID] {
				t.Errorf("v2 row %d handed over as %+v, want %+v", d.ID, d.Value, v2[d.ID])
			}
		default:
			t.Errorf("row %d at version %d", d.ID, d.SchemaVersion)
		}
	}
	if ds := drain(t, plain); len(ds) != 2 {
		t.Errorf("a group without converters got %d rows, want only the 2 v2 rows", len(ds))
	}
	hl = health(t, c, stream)
	if gh := groupAt(t, hl, 1, "g"); gh.Unread != 0 || gh.Unresolved != 0 {
		t.Errorf("after draining, the converting group at v1: %+v", gh)
	}
	if vh, _ := hl.Version(1); !vh.Retirable {
		t.Errorf("v1 is not retirable after the converting group drained it: %v", vh.Reasons)
	}

	t.Run("ErrorRetries", func(t *testing.T) {
		// A converter that fails once: the row comes back with attempt 2.
		flaky := failOnce(10)
		cons := consumer[EventV2](t, c, stream, "flaky", fastRetry(sqlstreams.ConsumerOptions{
			Converters: []sqlstreams.Converter{flaky}, Backoff: func(int) time.Duration { return 200 * time.Millisecond }}))
		// One claim: the failed conversion is due again only after the
		// backoff. A claim that takes longer than that (a loaded machine)
		// may meet the retry already: then it is the one extra row, the
		// Seq 10 row at attempt 2.
		first, err := cons.Claim(ctx(t), 50)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		var converted, retried []sqlstreams.Delivery[EventV2]
		for _, d := range first {
			if d.Attempt == 1 {
				converted = append(converted, d)
			} else {
				retried = append(retried, d)
			}
		}
		if len(converted) != 4 || len(retried) > 1 {
			t.Fatalf("first claim got %d rows at attempt 1 and %d retried, want the 4 whose conversion worked (and at most the retry)", len(converted), len(retried))
		}
		if err := cons.Ack(ctx(t), first...); err != nil {
			t.Fatalf("ack: %v", err)
		}
		if gh := groupAt(t, health(t, c, stream), 1, "flaky"); gh.Delayed != int64(1-len(retried)) || gh.Dead != 0 {
			t.Errorf("after a converter error, health of flaky at v1: %+v, want %d delayed and none dead", gh, 1-len(retried))
		}
		eventually(t, 30*time.Second, "the retry of the failed conversion", func() bool {
			retried = append(retried, drain(t, cons)...)
			return len(retried) > 0
		})
		if len(retried) != 1 || retried[0].Value.Seq != 10 || retried[0].Attempt != 2 || retried[0].SchemaVersion != 1 {
			t.Errorf("retry delivered %+v, want the Seq 10 row at attempt 2", retried)
		}
	})

	t.Run("ErrorHoldsOrderedPartition", func(t *testing.T) {
		// A converter error in an ordered group's claim: the rows behind the
		// failed one in its partition are not handed out (C10); they follow
		// it once it converts.
		var failedID int64
		var all []int64
		for id, e := range v1 {
			all = append(all, id)
			if e.Seq == 11 {
				failedID = id
			}
		}
		for id := range v2 {
			all = append(all, id)
		}
		slices.Sort(all)
		cons := consumer[EventV2](t, c, stream, "pull-flaky-ordered", fastRetry(sqlstreams.ConsumerOptions{
			Converters: []sqlstreams.Converter{failOnce(11)}, Ordered: true, Backoff: func(int) time.Duration { return 200 * time.Millisecond }}))
		first, err := cons.Claim(ctx(t), 50)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		before := all[:slices.Index(all, failedID)]
		if !slices.Equal(idsOf(first), before) {
			t.Fatalf("first claim got %v, want only the rows before the failed conversion %v", idsOf(first), before)
		}
		if err := cons.Ack(ctx(t), first...); err != nil {
			t.Fatalf("ack: %v", err)
		}
		var rest []sqlstreams.Delivery[EventV2]
		eventually(t, 30*time.Second, "the rest after the retried conversion", func() bool {
			rest = append(rest, drain(t, cons)...)
			return len(rest) >= len(all)-len(before)
		})
		if want := all[len(before):]; !slices.Equal(idsOf(rest), want) {
			t.Errorf("then got %v, want %v in order", idsOf(rest), want)
		}
	})

	t.Run("ErrorRetriesUnderRun", func(t *testing.T) {
		// Run's workers convert what its claims leave undecoded: a converter
		// error there is a delivery error too. The row comes back at attempt
		// 2, nothing goes dead, and an ordered group holds the row's
		// partition until it is handled.
		var all []int64
		for id := range v1 {
			all = append(all, id)
		}
		for id := range v2 {
			all = append(all, id)
		}
		slices.Sort(all)
		for _, ordered := range []bool{false, true} {
			name := fmt.Sprintf("run-flaky-ordered-%v", ordered)
			t.Run(name, func(t *testing.T) {
				cons := consumer[EventV2](t, c, stream, name, fastRetry(sqlstreams.ConsumerOptions{
					Converters: []sqlstreams.Converter{failOnce(11)}, Ordered: ordered}))
				var mu sync.Mutex
				var handled []sqlstreams.Delivery[EventV2]
				stop := runFor(t, cons, func(_ context.Context, d sqlstreams.Delivery[EventV2]) error {
					mu.Lock()
					defer mu.Unlock()
					handled = append(handled, d)
					return nil
				})
				eventually(t, 30*time.Second, "every row to be handled", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(handled) >= len(all)
				})
				stop()
				mu.Lock()
				defer mu.Unlock()
				ids := idsOf(handled)
				if !ordered {
					slices.Sort(ids)
				}
				if !slices.Equal(ids, all) {
					t.Errorf("handled %v, want every row once %v (in id order for an ordered group)", idsOf(handled), all)
				}
				for _, d := range handled {
					want, attempt := v2[d.ID], 1
					if old, ok := v1[d.ID]; ok {
						want, _ = v1ToV2(context.Background(), old)
						if old.Seq == 11 {
							attempt = 2
						}
					}
					if d.Value != want || d.Attempt != attempt {
						t.Errorf("row %d handled as %+v at attempt %d, want %+v at attempt %d", d.ID, d.Value, d.Attempt, want, attempt)
					}
				}
				if gh := groupAt(t, health(t, c, stream), 1, name); gh.Dead != 0 || gh.Unresolved != 0 {
					t.Errorf("after Run, health of %s at v1: %+v, want nothing dead or unresolved", name, gh)
				}
			})
		}
	})

	t.Run("ErrorGoesDead", func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		broken := sqlstreams.ConvertFrom[EventV1, EventV2](func(context.Context, EventV1) (EventV2, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			return EventV2{}, errors.New("no exchange rate")
		})
		cons := consumer[EventV2](t, c, stream, "broken", fastRetry(sqlstreams.ConsumerOptions{
			Converters: []sqlstreams.Converter{broken}, MaxAttempts: 3}))
		eventually(t, 30*time.Second, "three converter failures to go dead", func() bool {
			drain(t, cons)
			return groupAt(t, health(t, c, stream), 1, "broken").Dead == 3
		})
		dls, err := cons.DeadLetters(ctx(t), 0, 10)
		if err != nil {
			t.Fatalf("DeadLetters: %v", err)
		}
		if len(dls) != 3 {
			t.Fatalf("%d dead letters, want the 3 v1 rows", len(dls))
		}
		for _, dl := range dls {
			if dl.Attempt != 3 || dl.SchemaVersion != 1 || !strings.Contains(dl.Error, "no exchange rate") {
				t.Errorf("dead letter %+v, want attempt 3 at v1 with the converter's error", dl)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if calls != 9 {
			t.Errorf("the converter ran %d times, want 3 attempts for each of 3 rows", calls)
		}
	})

	t.Run("Undecodable", func(t *testing.T) {
		const stream = "r7-bad"
		raw := producer[sqlstreams.RawPayload](t, c, stream)
		badID, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: []byte(`{"seq":"not a number","total":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		goodID := produceV1(t, producer[EventV1](t, c, stream), 1)[0]
		var seen []EventV1
		spy := sqlstreams.ConvertFrom[EventV1, EventV2](func(ctx context.Context, old EventV1) (EventV2, error) {
			seen = append(seen, old)
			return v1ToV2(ctx, old)
		})
		cons := consumer[EventV2](t, c, stream, "g", &sqlstreams.ConsumerOptions{Converters: []sqlstreams.Converter{spy}})
		got := drain(t, cons)
		if len(got) != 1 || got[0].ID != goodID {
			t.Errorf("got %v, want only the decodable row %d", idsOf(got), goodID)
		}
		if len(seen) != 1 {
			t.Errorf("the converter was called %d times, want once: an undecodable payload never reaches it", len(seen))
		}
		dls, err := cons.DeadLetters(ctx(t), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(dls) != 1 || dls[0].ID != badID || dls[0].Attempt != 1 || !strings.Contains(dls[0].Error, "schema version 1") {
			t.Errorf("dead letters %+v, want row %d dead at attempt 1 with a decode error naming schema version 1", dls, badID)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		// A converter must produce the group's type and come from another version.
		_, err := c.Stream[Order3](stream).Consumer("wrong-target").Register(ctx(t),
			&sqlstreams.ConsumerOptions{Converters: []sqlstreams.Converter{conv}})
		if !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("a converter to EventV2 on an Order3 group: err %v, want ErrInvalidOption", err)
		}
		self := sqlstreams.ConvertFrom[EventV2, EventV2](func(_ context.Context, e EventV2) (EventV2, error) { return e, nil })
		_, err = c.Stream[EventV2](stream).Consumer("self").Register(ctx(t), &sqlstreams.ConsumerOptions{Converters: []sqlstreams.Converter{self}})
		if !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("a converter from the group's own version: err %v, want ErrInvalidOption", err)
		}
		for _, name := range []string{"wrong-target", "self"} {
			if groupExists(t, c, stream, name) {
				t.Errorf("a refused converter registration created group %q", name)
			}
		}
	})
}

// failOnce converts EventV1 as v1ToV2 does, but fails the first conversion
// of the row whose Seq is seq.
func failOnce(seq int) sqlstreams.Converter {
	var mu sync.Mutex
	calls := map[int]int{}
	return sqlstreams.ConvertFrom[EventV1, EventV2](func(ctx context.Context, old EventV1) (EventV2, error) {
		mu.Lock()
		calls[old.Seq]++
		first := calls[old.Seq] == 1
		mu.Unlock()
		if old.Seq == seq && first {
			return EventV2{}, errTest
		}
		return v1ToV2(ctx, old)
	})
}
