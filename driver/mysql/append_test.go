package mysql_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// oneStatementFixture is a MariaDB database with a stream of three
// partitions, a driver that records its statements and one that waits a
// second for a partition's append lock.
type oneStatementFixture struct {
	dsn    string
	drv    *mysql.Driver
	log    *mysql.StatementLog
	waiter *mysql.Driver
	stream driver.StreamConfig
	// mariadb: appends are one statement; MySQL appends in a transaction
	// and keeps the same locks.
	mariadb bool
}

func newOneStatementFixture(t *testing.T, params string) *oneStatementFixture {
	t.Helper()
	dsn := withParams(newDatabase(t), params)
	drv := mysql.Open(dsn)
	log := mysql.RecordStatements(drv, dsn)
	t.Cleanup(func() { drv.Close() })
	if err := drv.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st, err := drv.CreateStream(testCtx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: "one", Partitions: 3, CreatedAt: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	waiter := mysql.Open(dsn, mysql.WithLockTimeout(time.Second))
	t.Cleanup(func() { waiter.Close() })
	if err := waiter.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return &oneStatementFixture{dsn: dsn, drv: drv, log: log, waiter: waiter, stream: st, mariadb: mysql.IsMariaDB(drv)}
}

// rowsTo is one row for each partition given, in that order.
func rowsTo(parts ...int) []driver.AppendRow {
	rows := make([]driver.AppendRow, len(parts))
	for i, p := range parts {
		rows[i] = driver.AppendRow{Partition: p, SchemaVersion: 1, Key: fmt.Sprintf("k%d", i), HasKey: true, RoutingKey: "r",
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), ProducedAt: time.Now()}
	}
	return rows
}

// logRows is what the stream's log holds: id and partition of each row, in
// id order.
func (f *oneStatementFixture) logRows(t *testing.T) [][2]int64 {
	t.Helper()
	rows, err := f.drv.DB().QueryContext(testCtx(t), fmt.Sprintf("SELECT id, `partition` FROM message_log_%d ORDER BY id", f.stream.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppendOneStatement: on MariaDB the driver's own append of rows that
// fit one INSERT is that INSERT alone, and it keeps what the transaction
// kept. It returns the rows' ids in input order, also when ids step by more
// than one. It takes the append lock
// of every partition it writes before it takes ids (C5): while a caller's
// transaction holds a partition (its ids taken, not committed), an append to
// it waits and then fails with ErrConflict, writing nothing to any of its
// partitions, and once that transaction commits the append's ids come after
// the transaction's; an append to another partition does not wait. A
// stream whose lock rows are gone (destroyed under the append) gives
// ErrStreamNotFound and no row, also when sql_mode is not strict.
func TestAppendOneStatement(t *testing.T) {
	t.Parallel()
	for _, params := range []string{"", "auto_increment_increment=3"} {
		t.Run("one statement/"+params, func(t *testing.T) {
			f := newOneStatementFixture(t, params)
			f.log.Take()
			rows := rowsTo(2, 0, 1, 0, 2, 2)
			ids, err := f.drv.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rows})
			if err != nil {
				t.Fatal(err)
			}
			stmts := f.log.Take()
			if !f.mariadb {
				if len(stmts) < 3 || !strings.HasPrefix(stmts[0], "START TRANSACTION") || stmts[len(stmts)-1] != "COMMIT" {
					t.Fatalf("the append sent %q; want a transaction on MySQL", stmts)
				}
			} else if len(stmts) != 1 || !strings.HasPrefix(stmts[0], fmt.Sprintf("INSERT INTO message_log_%d ", f.stream.ID)) || !strings.Contains(stmts[0], "FOR UPDATE WAIT") {
				t.Fatalf("the append sent %q; want one INSERT that locks the partitions", stmts)
			}
			got := f.logRows(t)
			if len(got) != len(rows) {
				t.Fatalf("the log holds %v; want %d rows", got, len(rows))
			}
			for i, id := range ids {
				if got[i][0] != id || got[i][1] != int64(rows[i].Partition) {
					t.Fatalf("ids %v name rows %v; want row %d of partition %d at id %d", ids, got, i, rows[i].Partition, id)
				}
			}
		})
	}
	t.Run("partition locks", func(t *testing.T) {
		f := newOneStatementFixture(t, "")
		tx, err := f.drv.DB().BeginTx(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		txIDs, err := f.drv.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Tx: mysql.Tx(tx), Rows: rowsTo(1)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.waiter.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rowsTo(0, 1, 0)})
		if !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), "one of partitions 0, 1") {
			t.Fatalf("append to partitions 0 and 1 while a transaction holds 1: %v; want ErrConflict naming them", err)
		}
		other, err := f.waiter.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rowsTo(2)})
		if err != nil {
			t.Fatalf("append to partition 2 while a transaction holds 1: %v", err)
		}
		if got := f.logRows(t); !slices.Equal(got, [][2]int64{{other[0], 2}}) {
			t.Fatalf("the log holds %v while the transaction is open; want only the row of partition 2, %d", got, other[0])
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		after, err := f.waiter.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rowsTo(1, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if after[0] <= txIDs[0] || after[1] <= txIDs[0] {
			t.Errorf("append after the transaction committed id %d got ids %v; want higher ones", txIDs[0], after)
		}
	})
	// A transaction holding partition 1 keeps no append from partitions 0
	// and 2, in one statement or in a transaction: each partition's lock row
	// is looked up alone, not passed over by a scan of the stream's rows.
	t.Run("other partitions", func(t *testing.T) {
		f := newOneStatementFixture(t, "")
		inTx := mysql.Open(f.dsn, mysql.WithLockTimeout(time.Second))
		mysql.AppendInTx(inTx)
		t.Cleanup(func() { inTx.Close() })
		if err := inTx.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		tx, err := f.drv.DB().BeginTx(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := f.drv.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Tx: mysql.Tx(tx), Rows: rowsTo(1)}); err != nil {
			t.Fatal(err)
		}
		for name, d := range map[string]*mysql.Driver{"one statement": f.waiter, "transaction": inTx} {
			if _, err := d.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rowsTo(0, 2, 0)}); err != nil {
				t.Errorf("%s: append to partitions 0 and 2 while a transaction holds 1: %v", name, err)
			}
		}
		if got := f.logRows(t); len(got) != 6 {
			t.Errorf("the log holds %v while the transaction is open; want the 6 rows of partitions 0 and 2", got)
		}
	})
	for _, tc := range []struct{ name, params string }{
		{"strict", ""},
		{"not strict", "sql_mode=%27%27"},
	} {
		t.Run("lock rows gone/"+tc.name, func(t *testing.T) {
			f := newOneStatementFixture(t, tc.params)
			if _, err := f.drv.DB().ExecContext(testCtx(t), `DELETE FROM stream_partition WHERE stream_id = ?`, f.stream.ID); err != nil {
				t.Fatal(err)
			}
			f.log.Take()
			for _, parts := range [][]int{{0}, {0, 2}} {
				_, err := f.drv.Append(testCtx(t), driver.AppendParams{Stream: f.stream, Rows: rowsTo(parts...)})
				if !errors.Is(err, driver.ErrStreamNotFound) {
					t.Errorf("append to partitions %v without lock rows: %v; want ErrStreamNotFound", parts, err)
				}
			}
			// Each append is one INSERT, and its refusal one read of the
			// stream's configuration that tells a destroyed stream from an
			// altered one.
			if stmts := f.log.Take(); f.mariadb && (len(stmts) != 4 || !strings.HasPrefix(stmts[0], "INSERT") || !strings.HasPrefix(stmts[2], "INSERT") ||
				!strings.Contains(stmts[1], "FROM stream_config") || !strings.Contains(stmts[3], "FROM stream_config")) {
				t.Errorf("the appends sent %q; want one INSERT each, then one read of stream_config", stmts)
			}
			if got := f.logRows(t); len(got) != 0 {
				t.Errorf("the log holds %v; want nothing", got)
			}
		})
	}
}
