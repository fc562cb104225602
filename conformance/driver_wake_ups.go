package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("D13_WakeUps", testDriverWakeUps) }

// testDriverWakeUps holds a driver to what Capabilities().Notify declares.
// A driver that declares it wakes a subscriber when another driver on the
// same namespace (another process, to the database) appends to the stream;
// Run relies on that to pick up new rows before its next poll. Every
// Notifier, declaring it or not, returns from Subscribe once its context
// ends, so that no consumer waits on it past Close.
func testDriverWakeUps(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	n, ok := f.drv.(driver.Notifier)
	if f.drv.Capabilities().Notify && !ok {
		t.Fatalf("%s declares Notify but does not implement driver.Notifier", h.target.Name)
	}
	if !ok {
		return
	}
	woken := make(chan struct{}, 1)
	subCtx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- n.Subscribe(subCtx, driver.SubscribeParams{StreamID: f.stream.ID, Wake: func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		}})
	}()
	if f.drv.Capabilities().Notify {
		other, err := h.target.Open(h.ns(t))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		waitWoken(t, other, f.stream, woken)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && ctx(t).Err() == nil {
			t.Fatalf("Subscribe returned %v after its context ended; want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Subscribe did not return within a minute of its context ending")
	}
}

// waitWoken appends a row through other once a second until the subscriber
// is woken: the first append may come before the subscription listens. It
// gives up after a minute.
func waitWoken(t *testing.T, other driver.Driver, st driver.StreamConfig, woken <-chan struct{}) {
	t.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	giveUp := time.After(time.Minute)
	for {
		row := driver.AppendRow{SchemaVersion: 1, Payload: []byte(`{}`), ProducedAt: time.Now().UTC()}
		if _, err := other.Append(ctx(t), driver.AppendParams{Stream: st, Rows: []driver.AppendRow{row}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
			return
		case <-tick.C:
		case <-giveUp:
			t.Fatal("the driver declares Notify, but no append by another driver woke the subscriber within a minute")
		}
	}
}
