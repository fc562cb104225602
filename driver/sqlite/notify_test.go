package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// A file database declares Notify: its write-ahead log is watched, and the
// suite's D13_WakeUps and API_WakeAcrossClients hold it to waking consumers
// of other clients. An in-memory one, which no other client can open, does
// not.
func TestNotifyDeclared(t *testing.T) {
	t.Parallel()
	if !sqlite.Open(filepath.Join(t.TempDir(), "wake.db")).Capabilities().Notify {
		t.Error("a file database does not declare Notify")
	}
	if sqlite.Open(":memory:").Capabilities().Notify {
		t.Error("an in-memory database declares Notify")
	}
}

// A driver's subscribers share one watch of the log: a write by another
// client wakes them all, and once the subscriber that keeps the watch
// leaves, the others are still woken.
func TestSubscribersShareWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wake.db")
	w := sqlite.Open(path)
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d := sqlite.Open(path)
	t.Cleanup(func() { _ = d.Close() })
	var wg sync.WaitGroup
	defer wg.Wait()
	subscribe := func() (chan struct{}, context.CancelFunc) {
		woken := make(chan struct{}, 1)
		sctx, cancel := context.WithCancel(ctx)
		wg.Go(func() {
			err := d.Subscribe(sctx, driver.SubscribeParams{StreamID: 1, Wake: func() {
				select {
				case woken <- struct{}{}:
				default:
				}
			}})
			if err != nil {
				t.Error(err)
			}
		})
		return woken, cancel
	}
	first, stopFirst := subscribe()
	second, stopSecond := subscribe()
	defer stopSecond()
	n := 0
	// woken writes to the file until ch is woken, so that a write before
	// the watch began cannot pass for a wake-up.
	woken := func(name string, ch chan struct{}) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			n++
			if _, err := w.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: fmt.Sprint("s", n), Partitions: 1, CreatedAt: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ch:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatalf("%s subscriber not woken by writes for 10s", name)
	}
	woken("the first", first)
	woken("the second", second)
	stopFirst()
	time.Sleep(50 * time.Millisecond) // the watch handed over
	for len(second) > 0 {
		<-second
	}
	woken("after the first left, the second", second)
}
