package postgres_test

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// An append or claim planned before AlterStream is refused with the stored
// configuration and writes or leases nothing (drivertest.CheckStalePlan):
// the driver's own append, one in a caller's transaction (which stays
// usable), a claim after the probe, and claims of a busy group (which skip
// the probe and may take the fast path).
func TestAlterRefusesStalePlans(t *testing.T) {
	t.Parallel()
	drivertest.CheckStalePlans(t, func(t *testing.T, _ string) drivertest.StalePlan {
		f := newFixture(t, 2)
		f.group("g", driver.GroupConfig{})
		f.appendN(0, 20)
		f.appendN(1, 20)
		claim := func(stream driver.StreamConfig) (driver.ClaimResult, error) {
			return f.drv.Claim(tctx(t), driver.ClaimParams{Stream: stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
				Limit: 5, Token: randomName("tok-"), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Minute)})
		}
		return drivertest.StalePlan{Ctx: tctx(t), Driver: f.drv, Stream: f.stream, Count: f.count, Partition: "partition",
			Claim: claim, Run: func(op string, stream driver.StreamConfig) error {
				rows := []driver.AppendRow{{Partition: 1, SchemaVersion: 1, Payload: []byte(`{"n":1}`), ProducedAt: f.now}}
				switch op {
				case "append":
					_, err := f.drv.Append(tctx(t), driver.AppendParams{Stream: stream, Rows: rows})
					return err
				case "append in a caller's transaction":
					tx, err := f.drv.Pool().Begin(tctx(t))
					if err != nil {
						t.Fatal(err)
					}
					defer func() { _ = tx.Rollback(tctx(t)) }()
					_, err = f.drv.Append(tctx(t), driver.AppendParams{Stream: stream, Rows: rows, Tx: postgres.Tx(tx)})
					var one int
					if qerr := tx.QueryRow(tctx(t), `SELECT 1`).Scan(&one); qerr != nil {
						t.Errorf("the caller's transaction after the refusal: %v", qerr)
					}
					return err
				default: // claims
					_, err := claim(stream)
					return err
				}
			}}
	})
}

// TestRegisterGroupDuringAlter: a group registered while an alter that adds
// partitions is in flight gets a cursor in every partition the stream has
// once both commit (drivertest.CheckRegisterDuringAlter). The alter is
// played by a transaction that takes the stream row as AlterStream does and
// raises the partition count; the registration must wait for it rather
// than read the old count.
func TestRegisterGroupDuringAlter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	var alterPID int
	drivertest.CheckRegisterDuringAlter(t, tctx(t), drivertest.RegisterDuringAlter{Driver: f.drv, Stream: f.stream,
		Hold: func() (func() error, error) {
			alter, err := f.drv.Pool().Begin(tctx(t))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = alter.Rollback(tctx(t)) })
			if err := alter.QueryRow(tctx(t), `SELECT pg_backend_pid()`).Scan(&alterPID); err != nil {
				return nil, err
			}
			if _, err := alter.Exec(tctx(t), `SELECT 1 FROM stream_config WHERE id = $1 FOR UPDATE`, f.stream.ID); err != nil {
				return nil, err
			}
			_, err = alter.Exec(tctx(t), `UPDATE stream_config SET partitions = 3 WHERE id = $1`, f.stream.ID)
			return func() error { return alter.Commit(tctx(t)) }, err
		},
		Blocked: func() (bool, error) {
			var waiting int
			err := f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM pg_stat_activity WHERE $1::integer = ANY(pg_blocking_pids(pid))`,
				alterPID).Scan(&waiting)
			return waiting > 0, err
		},
		Cursors: func() (n int64, err error) {
			err = f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM group_cursor WHERE stream_id = $1 AND group_name = 'late'`, f.stream.ID).Scan(&n)
			return n, err
		},
	})
}
