package conformance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C15_CloseStopsConsumers", testCloseStopsConsumers) }

// C15 (closed client): Close stops running consumers before it closes the
// driver. (BatchSize 1: Run holds only the running delivery, so nothing is
// queued for Close to release.) It waits for a running handler, records that handler's outcome,
// claims nothing more, and Run returns ErrClosed before Close returns.
func testCloseStopsConsumers(t *testing.T, h *harness) {
	c := h.client(t)
	p := producer[EventV1](t, c, "c15-close")
	produceV1(t, p, 3)
	cons := consumer[EventV1](t, c, "c15-close", "g", fastRetry(sqlstreams.ConsumerOptions{BatchSize: 1, ShutdownTimeout: 30 * time.Second}))

	started, release := make(chan struct{}), make(chan struct{})
	var handled atomic.Int32
	runErr := make(chan error, 1)
	go func() {
		runErr <- cons.Run(context.Background(), func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
			if handled.Add(1) == 1 {
				close(started)
				<-release
			}
			return nil
		})
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a handler was still running", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return after the handler finished")
	}
	// Run has finished when Close returns (Close waits for it), but the
	// goroutine above may not have been scheduled yet to pass its result
	// on: wait for that, bounded, rather than race it.
	select {
	case err := <-runErr:
		if !errors.Is(err, sqlstreams.ErrClosed) {
			t.Errorf("Run returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run had not returned 10s after Close returned")
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("%d deliveries were handled; Run must claim nothing once Close begins", n)
	}
	g := groupAt(t, health(t, h.client(t), "c15-close"), 1, "g")
	if g.Unresolved != 0 || g.Unread != 2 {
		t.Errorf("after Close: %d unresolved, %d unread; want the running handler's ack recorded (0) and 2 unread", g.Unresolved, g.Unread)
	}
}

func init() { register("C15_ListStreams", testListStreams) }

// C15 (admin): Client.Streams lists the streams by name, with renames and
// without destroyed streams.
func testListStreams(t *testing.T, h *harness) {
	c := h.client(t)
	for _, name := range []string{"b.stream", "a.stream", "c.stream"} {
		if _, err := c.Stream[EventV1](name).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stream[EventV1]("c.stream").Rename(ctx(t), "0.renamed"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stream[EventV1]("b.stream").Destroy(ctx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := c.Streams(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
		if s.Partitions != 2 {
			t.Errorf("stream %s lists %d partitions, want 2", s.Name, s.Partitions)
		}
	}
	if want := []string{"0.renamed", "a.stream"}; len(names) != 2 || names[0] != want[0] || names[1] != want[1] {
		t.Errorf("Streams lists %v, want %v", names, want)
	}
}
