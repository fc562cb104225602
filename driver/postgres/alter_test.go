package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// An append or claim planned before AlterStream is refused with the stored
// configuration and writes or leases nothing: the driver's own append, one
// in a caller's transaction (which stays usable), a claim after the probe,
// and claims of a busy group (which skip the probe and may take the fast
// path).
func TestAlterRefusesStalePlans(t *testing.T) {
	t.Parallel()
	stale := func(f *fixture, op string) error {
		rows := []driver.AppendRow{{Partition: 1, SchemaVersion: 1, Payload: []byte(`{"n":1}`), ProducedAt: f.now}}
		switch op {
		case "append":
			_, err := f.drv.Append(tctx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows})
			return err
		case "append in a caller's transaction":
			tx, err := f.drv.Pool().Begin(tctx(f.t))
			if err != nil {
				f.t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(tctx(f.t)) }()
			_, err = f.drv.Append(tctx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows, Tx: postgres.Tx(tx)})
			var one int
			if qerr := tx.QueryRow(tctx(f.t), `SELECT 1`).Scan(&one); qerr != nil {
				f.t.Errorf("the caller's transaction after the refusal: %v", qerr)
			}
			return err
		default: // claims
			_, err := f.drv.Claim(tctx(f.t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
				Limit: 5, Token: randomName("tok-"), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Minute)})
			return err
		}
	}
	for _, tc := range []struct {
		op   string
		busy bool // the group's claims before the alter took their Limit
	}{
		{op: "append"},
		{op: "append in a caller's transaction"},
		{op: "claim"},
		{op: "claim of a busy group", busy: true},
	} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 2)
			f.group("g", driver.GroupConfig{})
			f.appendN(0, 20)
			f.appendN(1, 20)
			if tc.busy {
				for range 2 {
					if res, _ := f.claim("g", "h", 5, f.now, time.Minute); len(res.Deliveries) != 5 {
						t.Fatalf("claim before the alter took %d of 5", len(res.Deliveries))
					}
				}
			}
			logCount := fmt.Sprintf(`SELECT count(*) FROM message_log_%d`, f.stream.ID)
			rowsBefore, batchesBefore := f.count(logCount), f.count(`SELECT count(*) FROM delivery_batch`)
			cursorsBefore := f.count(`SELECT sum(position) FROM group_cursor`)
			altered, err := f.drv.AlterStream(tctx(t), driver.AlterStreamParams{StreamID: f.stream.ID, Partitions: 3})
			if err != nil || altered.Partitions != 3 || altered.Generation != f.stream.Generation+1 {
				t.Fatalf("alter: %+v, %v", altered, err)
			}
			err = stale(f, tc.op)
			var changed *driver.StreamChangedError
			if !errors.As(err, &changed) || !errors.Is(err, driver.ErrStreamChanged) || changed.Current.Generation != altered.Generation ||
				changed.Current.Partitions != 3 {
				t.Fatalf("%s planned before the alter: %v; want a StreamChangedError with generation %d and 3 partitions", tc.op, err, altered.Generation)
			}
			if n := f.count(logCount); n != rowsBefore {
				t.Errorf("the log has %d rows after the refusal; want %d", n, rowsBefore)
			}
			if n := f.count(`SELECT count(*) FROM delivery_batch`); n != batchesBefore {
				t.Errorf("%d batches after the refusal; want %d", n, batchesBefore)
			}
			if n := f.count(`SELECT sum(position) FROM group_cursor`); n != cursorsBefore {
				t.Errorf("cursors moved by %d after the refusal", n-cursorsBefore)
			}
			if n := f.count(`SELECT count(*) FROM group_cursor WHERE partition = 2 AND position = 0`); n != 1 {
				t.Errorf("%d cursors of the new partition at its start; want 1", n)
			}
			f.stream = changed.Current // planned again, the call goes through
			if err := stale(f, tc.op); err != nil {
				t.Errorf("%s planned with the stored configuration: %v", tc.op, err)
			}
		})
	}
}

// TestRegisterGroupDuringAlter: a group registered while an alter that adds
// partitions is in flight gets a cursor in every partition the stream has
// once both commit. The alter is played by a transaction that takes the
// stream row as AlterStream does and raises the partition count; the
// registration must wait for it rather than read the old count.
func TestRegisterGroupDuringAlter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	alter, err := f.drv.Pool().Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = alter.Rollback(tctx(t)) }()
	var alterPID int
	if err := alter.QueryRow(tctx(t), `SELECT pg_backend_pid()`).Scan(&alterPID); err != nil {
		t.Fatal(err)
	}
	if _, err := alter.Exec(tctx(t), `SELECT 1 FROM stream_config WHERE id = $1 FOR UPDATE`, f.stream.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := alter.Exec(tctx(t), `UPDATE stream_config SET partitions = 3 WHERE id = $1`, f.stream.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.drv.RegisterGroup(tctx(t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: f.stream.ID, Name: "late",
			SchemaVersion: 1, CreatedAt: f.now}})
		done <- err
	}()
	// Wait, with a bound, until the registration either finished (the
	// defect: it read the old count) or waits on the alter's lock.
	var finished bool
	deadline := time.Now().Add(30 * time.Second)
	for !finished && time.Now().Before(deadline) {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
			var waiting int
			if err := f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM pg_stat_activity WHERE $1::integer = ANY(pg_blocking_pids(pid))`,
				alterPID).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting > 0 {
				deadline = time.Time{} // it waits: let the alter commit
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := alter.Commit(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if !finished {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var cursors int
	if err := f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM group_cursor WHERE stream_id = $1 AND group_name = 'late'`,
		f.stream.ID).Scan(&cursors); err != nil {
		t.Fatal(err)
	}
	if cursors != 3 {
		t.Fatalf("the group registered during the alter has %d cursors, want one in each of the 3 partitions", cursors)
	}
}
