package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// StalePlan is one driver's side of CheckStalePlan: a stream of two
// partitions, each with rows, and a group "g" of schema version 1.
type StalePlan struct {
	Ctx    context.Context
	Driver interface {
		driver.Driver
		driver.Alterer
	}
	// Stream is the stream as planned before the alter.
	Stream driver.StreamConfig
	// Count runs a query of one integer (COUNT, SUM) on the database; a
	// NULL is 0.
	Count func(query string) int64
	// Partition is the partition column as the engine's SQL names it.
	Partition string
	// Claim claims up to 5 rows for "g" with stream's configuration.
	Claim func(stream driver.StreamConfig) (driver.ClaimResult, error)
	// Run runs op (an append, or a claim when op starts with "claim")
	// planned with stream.
	Run func(op string, stream driver.StreamConfig) error
	// Altered, when set, checks the engine's own rows after the refusal.
	Altered func(altered driver.StreamConfig)
}

// CheckStalePlans runs CheckStalePlan, each in a parallel subtest on a
// fixture plan builds for it, for the calls every driver has: an append,
// one in a caller's transaction, a claim after the probe and claims of a
// busy group (which skip the probe), and for the engine's extra ones (an
// append path of its own).
func CheckStalePlans(t *testing.T, plan func(t *testing.T, op string) StalePlan, extra ...string) {
	t.Helper()
	ops := append([]string{"append", "append in a caller's transaction", "claim", busyClaim}, extra...)
	for _, op := range ops {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			CheckStalePlan(t, plan(t, op), op, op == busyClaim)
		})
	}
}

// busyClaim is a claim of a group whose claims before the alter took their
// Limit.
const busyClaim = "claim of a busy group"

// CheckStalePlan proves that op, planned before AlterStream adds a
// partition, is refused with the stored configuration (a
// *driver.StreamChangedError) and writes or leases nothing, that the new
// partition has the group's cursor at its start, and that op planned again
// goes through. With busy, the group's claims took their Limit before the
// alter (so a claim skips its probe).
func CheckStalePlan(t *testing.T, p StalePlan, op string, busy bool) {
	t.Helper()
	if busy {
		for range 2 {
			if res, err := p.Claim(p.Stream); err != nil || len(res.Deliveries) != 5 {
				t.Fatalf("claim before the alter took %d of 5 (%v)", len(res.Deliveries), err)
			}
		}
	}
	logCount := fmt.Sprintf(`SELECT COUNT(*) FROM message_log_%d`, p.Stream.ID)
	const batches, cursors = `SELECT COUNT(*) FROM delivery_batch`, `SELECT SUM(position) FROM group_cursor`
	rowsBefore, batchesBefore, cursorsBefore := p.Count(logCount), p.Count(batches), p.Count(cursors)
	altered, err := p.Driver.AlterStream(p.Ctx, driver.AlterStreamParams{StreamID: p.Stream.ID, Partitions: 3})
	if err != nil || altered.Partitions != 3 || altered.Generation != p.Stream.Generation+1 {
		t.Fatalf("alter: %+v, %v", altered, err)
	}
	err = p.Run(op, p.Stream)
	var changed *driver.StreamChangedError
	if !errors.As(err, &changed) || !errors.Is(err, driver.ErrStreamChanged) || changed.Current.Generation != altered.Generation ||
		changed.Current.Partitions != 3 {
		t.Fatalf("%s planned before the alter: %v; want a StreamChangedError with generation %d and 3 partitions", op, err, altered.Generation)
	}
	if n := p.Count(logCount); n != rowsBefore {
		t.Errorf("the log has %d rows after the refusal; want %d", n, rowsBefore)
	}
	if n := p.Count(batches); n != batchesBefore {
		t.Errorf("%d batches after the refusal; want %d", n, batchesBefore)
	}
	if n := p.Count(cursors); n != cursorsBefore {
		t.Errorf("cursors moved by %d after the refusal", n-cursorsBefore)
	}
	if n := p.Count(`SELECT COUNT(*) FROM group_cursor WHERE ` + p.Partition + ` = 2 AND position = 0`); n != 1 {
		t.Errorf("%d cursors of the new partition at its start; want 1", n)
	}
	if p.Altered != nil {
		p.Altered(altered)
	}
	if err := p.Run(op, changed.Current); err != nil { // planned again, the call goes through
		t.Errorf("%s planned with the stored configuration: %v", op, err)
	}
}

// RegisterDuringAlter is one driver's side of CheckRegisterDuringAlter: a
// stream of two partitions.
type RegisterDuringAlter struct {
	Driver driver.Driver
	Stream driver.StreamConfig
	// Hold begins the alter's part: a transaction that locks the stream's
	// row as AlterStream does and sets its partitions to 3, and returns
	// its commit.
	Hold func() (commit func() error, err error)
	// Blocked reports whether another session waits for the held lock.
	Blocked func() (bool, error)
	// Cursors counts the cursors of the group "late".
	Cursors func() (int64, error)
}

// CheckRegisterDuringAlter proves that a group registered while an alter
// that adds partitions is in flight gets a cursor in every partition the
// stream has once both commit: the registration waits for the alter rather
// than read the old count.
func CheckRegisterDuringAlter(t *testing.T, ctx context.Context, r RegisterDuringAlter) {
	t.Helper()
	commit, err := r.Hold()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Driver.RegisterGroup(ctx, driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: r.Stream.ID, Name: "late",
			SchemaVersion: 1, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}})
		done <- err
	}()
	finished, err := WaitBlocked(done, r.Blocked)
	if err != nil {
		t.Fatal(err)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	if !finished {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cursors, err := r.Cursors()
	if err != nil {
		t.Fatal(err)
	}
	if cursors != 3 {
		t.Fatalf("the group registered during the alter has %d cursors, want one in each of the 3 partitions", cursors)
	}
}

// WaitBlocked waits until the call whose outcome done carries either
// returned (finished, with its error) or waits on a lock, as blocked
// reports. The 30 s bound is a failure detector, not an expected duration:
// a call that neither returns nor waits by then is left running and the
// caller's next step (releasing the lock) decides.
func WaitBlocked(done <-chan error, blocked func() (bool, error)) (finished bool, err error) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			return true, err
		default:
		}
		if waiting, err := blocked(); err != nil || waiting {
			return false, err
		}
	}
	return false, nil
}
