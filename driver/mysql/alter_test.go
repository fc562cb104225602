package mysql_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

type alterFixture struct {
	t      *testing.T
	drv    *mysql.Driver
	db     *sql.DB
	stream driver.StreamConfig
	now    time.Time
}

func newAlterFixture(t *testing.T, inTx bool, opts ...mysql.Option) *alterFixture {
	t.Helper()
	drv := mysql.Open(newDatabase(t), opts...)
	if inTx {
		mysql.AppendInTx(drv)
	}
	t.Cleanup(func() { drv.Close() })
	ctx := testCtx(t)
	if err := drv.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	st, err := drv.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "alter", Partitions: 2, CreatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.RegisterGroup(ctx, driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	f := &alterFixture{t: t, drv: drv, db: drv.DB(), stream: st, now: now}
	for part := range 2 {
		rows := make([]driver.AppendRow, 20)
		for i := range rows {
			rows[i] = driver.AppendRow{Partition: part, SchemaVersion: 1, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), ProducedAt: now}
		}
		if _, err := drv.Append(ctx, driver.AppendParams{Stream: st, Rows: rows}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *alterFixture) count(query string) int64 {
	f.t.Helper()
	var n sql.NullInt64
	if err := f.db.QueryRowContext(testCtx(f.t), query).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n.Int64
}

func (f *alterFixture) claim() (driver.ClaimResult, error) {
	return f.drv.Claim(testCtx(f.t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
		Limit: 5, Token: fmt.Sprintf("tok-%d", time.Now().UnixNano()), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Minute)})
}

// stale runs op with the fixture's (possibly stale) configuration.
func (f *alterFixture) stale(op string) error {
	rows := []driver.AppendRow{{Partition: 1, SchemaVersion: 1, Payload: []byte(`{"n":1}`), ProducedAt: f.now}}
	switch op {
	case "append", "append in a transaction":
		_, err := f.drv.Append(testCtx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows})
		return err
	case "append in a caller's transaction":
		tx, err := f.db.BeginTx(testCtx(f.t), nil)
		if err != nil {
			f.t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		_, err = f.drv.Append(testCtx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows, Tx: mysql.Tx(tx)})
		var one int
		if qerr := tx.QueryRowContext(testCtx(f.t), `SELECT 1`).Scan(&one); qerr != nil {
			f.t.Errorf("the caller's transaction after the refusal: %v", qerr)
		}
		return err
	default: // claims
		_, err := f.claim()
		return err
	}
}

// An append or claim planned before AlterStream is refused with the stored
// configuration and writes or leases nothing: the one-statement append,
// the transaction's, one in a caller's transaction (which stays usable), a
// claim after the probe, and claims of a busy group (which skip the probe).
func TestAlterRefusesStalePlans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   string
		busy bool // the group's claims before the alter took their Limit
	}{
		{op: "append"},
		{op: "append in a transaction"},
		{op: "append in a caller's transaction"},
		{op: "claim"},
		{op: "claim of a busy group", busy: true},
	} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			f := newAlterFixture(t, tc.op == "append in a transaction")
			if tc.busy {
				for range 2 {
					if res, err := f.claim(); err != nil || len(res.Deliveries) != 5 {
						t.Fatalf("claim before the alter took %d of 5 (%v)", len(res.Deliveries), err)
					}
				}
			}
			logCount := fmt.Sprintf(`SELECT COUNT(*) FROM message_log_%d`, f.stream.ID)
			rowsBefore, batchesBefore := f.count(logCount), f.count(`SELECT COUNT(*) FROM delivery_batch`)
			cursorsBefore := f.count(`SELECT SUM(position) FROM group_cursor`)
			altered, err := f.drv.AlterStream(testCtx(t), driver.AlterStreamParams{StreamID: f.stream.ID, Partitions: 3})
			if err != nil || altered.Partitions != 3 || altered.Generation != f.stream.Generation+1 {
				t.Fatalf("alter: %+v, %v", altered, err)
			}
			err = f.stale(tc.op)
			var changed *driver.StreamChangedError
			if !errors.As(err, &changed) || !errors.Is(err, driver.ErrStreamChanged) || changed.Current.Generation != altered.Generation ||
				changed.Current.Partitions != 3 {
				t.Fatalf("%s planned before the alter: %v; want a StreamChangedError with generation %d and 3 partitions", tc.op, err, altered.Generation)
			}
			if n := f.count(logCount); n != rowsBefore {
				t.Errorf("the log has %d rows after the refusal; want %d", n, rowsBefore)
			}
			if n := f.count(`SELECT COUNT(*) FROM delivery_batch`); n != batchesBefore {
				t.Errorf("%d batches after the refusal; want %d", n, batchesBefore)
			}
			if n := f.count(`SELECT SUM(position) FROM group_cursor`); n != cursorsBefore {
				t.Errorf("cursors moved by %d after the refusal", n-cursorsBefore)
			}
			if n := f.count("SELECT COUNT(*) FROM group_cursor WHERE `partition` = 2 AND position = 0"); n != 1 {
				t.Errorf("%d cursors of the new partition at its start; want 1", n)
			}
			if n := f.count(fmt.Sprintf(`SELECT COUNT(*) FROM stream_partition WHERE stream_id = %d AND generation = %d`, f.stream.ID, altered.Generation)); n != 3 {
				t.Errorf("%d partition rows at the new generation; want 3", n)
			}
			f.stream = changed.Current // planned again, the call goes through
			if err := f.stale(tc.op); err != nil {
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
	// The registration waits for the alter as long as the test needs to
	// see it wait, however busy the machine.
	f := newAlterFixture(t, false, mysql.WithLockTimeout(5*time.Minute))
	ctx := testCtx(t)
	conn, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var alterID int64
	if err := conn.QueryRowContext(ctx, `SELECT CONNECTION_ID()`).Scan(&alterID); err != nil {
		t.Fatal(err)
	}
	alter, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = alter.Rollback() }()
	var one int
	if err := alter.QueryRowContext(ctx, `SELECT 1 FROM stream_config WHERE id = ? FOR UPDATE`, f.stream.ID).Scan(&one); err != nil {
		t.Fatal(err)
	}
	if _, err := alter.ExecContext(ctx, `UPDATE stream_config SET partitions = 3 WHERE id = ?`, f.stream.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.drv.RegisterGroup(ctx, driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: f.stream.ID, Name: "late",
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
			if err := f.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX t
				JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
				WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE() AND p.ID <> ?`, alterID).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting > 0 {
				deadline = time.Time{} // it waits: let the alter commit
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := alter.Commit(); err != nil {
		t.Fatal(err)
	}
	if !finished {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var cursors int
	if err := f.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM group_cursor WHERE stream_id = ? AND group_name = 'late'`,
		f.stream.ID).Scan(&cursors); err != nil {
		t.Fatal(err)
	}
	if cursors != 3 {
		t.Fatalf("the group registered during the alter has %d cursors, want one in each of the 3 partitions", cursors)
	}
}
