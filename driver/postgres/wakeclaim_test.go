package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// A claim that follows a notification for its stream (an idle consumer
// woken by another client's append) skips the probe and reads the rows past
// where the group's last claim left its cursor in its first round trip: two
// round trips, the first beginning the transaction, the second ending it.
// Also on a stream of several partitions, with the new row in another
// partition than the last claim's: the first reads the rows past every
// cursor (queueWindows) and finds that no other cursor has rows
// (queueRowsElsewhere), so that the record of the woken rows ends the claim
// instead of a lock that finds nothing. A claim with no notification since
// the group's last claim stays one probe when nothing is new.
func TestWokenClaimInTwoRoundTrips(t *testing.T) {
	t.Parallel()
	for _, mode := range execModes {
		for _, c := range []struct {
			woken      bool
			partitions int
		}{{true, 1}, {false, 1}, {true, 4}, {false, 4}} {
			woken := c.woken
			name := fmt.Sprintf("%s/%d-partitions/idle", mode.name, c.partitions)
			if woken {
				name = fmt.Sprintf("%s/%d-partitions/woken", mode.name, c.partitions)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tr := &sentTracer{}
				f := newFixture(t, c.partitions, append(slices.Clone(mode.opts), postgres.WithPoolConfig(func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }))...)
				other := postgres.Open(f.ns, mode.opts...) // the producing client
				t.Cleanup(func() { _ = other.Close() })
				if err := other.Migrate(tctx(t)); err != nil { // it learns the channels' names
					t.Fatal(err)
				}
				f.group("g", driver.GroupConfig{})
				var wakes atomic.Int64
				wake := make(chan struct{}, 1)
				ctx, cancel := context.WithCancel(tctx(t))
				done := make(chan error, 1)
				go func() {
					done <- f.drv.Subscribe(ctx, driver.SubscribeParams{StreamID: f.stream.ID, Wake: func() {
						wakes.Add(1)
						select {
						case wake <- struct{}{}:
						default:
						}
					}})
				}()
				t.Cleanup(func() { cancel(); <-done })
				// awaitWakes waits until the subscriber was woken n times in all.
				awaitWakes := func(n int64) {
					t.Helper()
					giveUp := time.After(time.Minute)
					for wakes.Load() < n {
						select {
						case <-wake:
						case <-giveUp:
							t.Fatalf("woken %d times within a minute; want %d", wakes.Load(), n)
						}
					}
				}
				produce := func(part int) int64 {
					t.Helper()
					row := driver.AppendRow{Partition: part, SchemaVersion: 1, Payload: []byte(`{}`), ProducedAt: f.now}
					got, err := other.Append(tctx(t), driver.AppendParams{Stream: f.stream, Rows: []driver.AppendRow{row}})
					if err != nil {
						t.Fatal(err)
					}
					return got[0]
				}
				awaitWakes(1) // listening (the listener wakes once its LISTEN took effect)
				if res, _ := f.claim("g", "h", 10, f.now, time.Minute); len(res.Deliveries) != 0 {
					t.Fatalf("the claim of an empty stream took %v", ids(res.Deliveries))
				}
				first := produce(0)
				awaitWakes(2)
				if res, _ := f.claim("g", "h", 10, f.now, time.Minute); !slices.Equal(ids(res.Deliveries), []int64{first}) {
					t.Fatalf("the claim after the first append took %v; want [%d]", ids(res.Deliveries), first)
				}
				var want []int64
				if woken {
					// Not where the claim before left a cursor, on a stream
					// of several partitions (queueWindows).
					want = []int64{produce(c.partitions - 1)}
					awaitWakes(3)
				}
				tr.take()
				res, _ := f.claim("g", "h", 10, f.now, time.Minute)
				sent := tr.take()
				if !slices.Equal(ids(res.Deliveries), want) {
					t.Fatalf("the claim took %v; want %v", ids(res.Deliveries), want)
				}
				if !woken {
					if len(sent) != 1 || firstWord(sent[0][0]) == "begin" {
						t.Errorf("the idle claim sent %q; want one probe", sent)
					}
					return
				}
				if len(sent) != 2 || firstWord(sent[0][0]) != "begin" || firstWord(sent[1][len(sent[1])-1]) != "commit" {
					t.Errorf("the woken claim sent %q; want two batches, from BEGIN to COMMIT", sent)
				}
				if c.partitions > 1 {
					// Rows in two partitions: the woken claim takes both.
					want := []int64{produce(1), produce(2)}
					awaitWakes(4)
					res, _ := f.claim("g", "h", 10, f.now, time.Minute)
					got := ids(res.Deliveries)
					slices.Sort(got)
					if !slices.Equal(got, want) {
						t.Errorf("the woken claim of rows in two partitions took %v; want %v", got, want)
					}
				}
			})
		}
	}
}

// A claim that takes fewer rows than its Limit from the partition it locks
// first goes on to the other partitions that have rows: it ends with that
// partition only when its first round trip found no other cursor with rows
// past it (queueRowsElsewhere). Rows in two partitions come in one claim,
// whichever partition it locks first.
func TestClaimGoesOnWhenOtherPartitionsHaveRows(t *testing.T) {
	t.Parallel()
	for _, mode := range execModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 4, mode.opts...)
			f.group("g", driver.GroupConfig{})
			first := f.appendN(1, 1)
			if res, _ := f.claim("g", "h", 10, f.now, time.Minute); !slices.Equal(ids(res.Deliveries), first) {
				t.Fatalf("the first claim took %v; want %v", ids(res.Deliveries), first)
			}
			for round := range 8 { // each claim draws the partition it locks first
				want := append(f.appendN(1, 1), f.appendN(3, 2)...)
				res, _ := f.claim("g", "h", 10, f.now, time.Minute)
				got := ids(res.Deliveries)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d: the claim took %v; want %v, from partitions 1 and 3", round, got, want)
				}
			}
		})
	}
}
