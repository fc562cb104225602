package mysql_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
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

func (f *alterFixture) claim(stream driver.StreamConfig) (driver.ClaimResult, error) {
	return f.drv.Claim(testCtx(f.t), driver.ClaimParams{Stream: stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
		Limit: 5, Token: fmt.Sprintf("tok-%d", time.Now().UnixNano()), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Minute)})
}

// stale runs op planned with stream (possibly stale).
func (f *alterFixture) stale(op string, stream driver.StreamConfig) error {
	rows := []driver.AppendRow{{Partition: 1, SchemaVersion: 1, Payload: []byte(`{"n":1}`), ProducedAt: f.now}}
	switch op {
	case "append", "append in a transaction":
		_, err := f.drv.Append(testCtx(f.t), driver.AppendParams{Stream: stream, Rows: rows})
		return err
	case "append in a caller's transaction":
		tx, err := f.db.BeginTx(testCtx(f.t), nil)
		if err != nil {
			f.t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		_, err = f.drv.Append(testCtx(f.t), driver.AppendParams{Stream: stream, Rows: rows, Tx: mysql.Tx(tx)})
		var one int
		if qerr := tx.QueryRowContext(testCtx(f.t), `SELECT 1`).Scan(&one); qerr != nil {
			f.t.Errorf("the caller's transaction after the refusal: %v", qerr)
		}
		return err
	default: // claims
		_, err := f.claim(stream)
		return err
	}
}

// An append or claim planned before AlterStream is refused with the stored
// configuration and writes or leases nothing (drivertest.CheckStalePlan):
// the one-statement append, the transaction's, one in a caller's
// transaction (which stays usable), a claim after the probe, and claims of
// a busy group (which skip the probe). Every partition row carries the new
// generation.
func TestAlterRefusesStalePlans(t *testing.T) {
	t.Parallel()
	drivertest.CheckStalePlans(t, func(t *testing.T, op string) drivertest.StalePlan {
		f := newAlterFixture(t, op == "append in a transaction")
		return drivertest.StalePlan{Ctx: testCtx(t), Driver: f.drv, Stream: f.stream, Count: f.count, Partition: "`partition`", Claim: f.claim, Run: f.stale,
			Altered: func(altered driver.StreamConfig) {
				if n := f.count(fmt.Sprintf(`SELECT COUNT(*) FROM stream_partition WHERE stream_id = %d AND generation = %d`, f.stream.ID, altered.Generation)); n != 3 {
					t.Errorf("%d partition rows at the new generation; want 3", n)
				}
			}}
	}, "append in a transaction")
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
	t.Cleanup(func() { conn.Close() }) // after the alter's rollback
	var alterID int64
	if err := conn.QueryRowContext(ctx, `SELECT CONNECTION_ID()`).Scan(&alterID); err != nil {
		t.Fatal(err)
	}
	drivertest.CheckRegisterDuringAlter(t, ctx, drivertest.RegisterDuringAlter{Driver: f.drv, Stream: f.stream,
		Hold: func() (func() error, error) {
			alter, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = alter.Rollback() })
			var one int
			if err := alter.QueryRowContext(ctx, `SELECT 1 FROM stream_config WHERE id = ? FOR UPDATE`, f.stream.ID).Scan(&one); err != nil {
				return nil, err
			}
			_, err = alter.ExecContext(ctx, `UPDATE stream_config SET partitions = 3 WHERE id = ?`, f.stream.ID)
			return alter.Commit, err
		},
		Blocked: func() (bool, error) {
			var waiting int
			err := f.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX t
				JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
				WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE() AND p.ID <> ?`, alterID).Scan(&waiting)
			return waiting > 0, err
		},
		Cursors: func() (int64, error) {
			var n int64
			err := f.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM group_cursor WHERE stream_id = ? AND group_name = 'late'`, f.stream.ID).Scan(&n)
			return n, err
		},
	})
}
