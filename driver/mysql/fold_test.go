package mysql_test

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// TestFoldedAppendKeepsCommitOrder (C5) proves the mechanism of the
// driver's own appends on MariaDB, which run as one compound statement: the
// partition locks come before the INSERT takes its ids and are held to
// COMMIT. A batch to two partitions, one of them held by an open ProduceTx,
// waits for it without having inserted anything (not even uncommitted rows:
// no id is taken while it waits), and its ids come after the ProduceTx's
// once that commits. A lock wait that times out leaves the connection as it
// was, and a stream whose partitions are gone gets ErrStreamNotFound with
// nothing written. On MySQL 8 the appends take the four-statement path,
// and the same order holds.
func TestFoldedAppendKeepsCommitOrder(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn)
	c := openClient(t, drv)
	stream := c.Stream[event]("fold")
	info, err := stream.Create(testCtx(t), &sqlstreams.StreamOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	mariadb := mysql.IsMariaDB(drv)
	// Keys for each partition.
	keys := map[int]string{}
	for i := 0; len(keys) < 2; i++ {
		k := fmt.Sprintf("k%d", i)
		if _, ok := keys[sqlstreams.PartitionForKey(k, 2)]; !ok {
			keys[sqlstreams.PartitionForKey(k, 2)] = k
		}
	}
	if _, err := p.Produce(testCtx(t), event{N: 0}, sqlstreams.Key(keys[1])); err != nil {
		t.Fatal(err)
	}
	if got := mysql.FoldedAppends(drv); mariadb != (got == 1) {
		t.Fatalf("MariaDB %v: %d appends ran as one compound statement; want one on MariaDB, none on MySQL", mariadb, got)
	}

	tx, err := drv.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	held, err := p.ProduceTx(testCtx(t), mysql.Tx(tx), event{N: 1}, sqlstreams.Key(keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := p.ProduceBatch(testCtx(t), sqlstreams.NewMessage(event{N: 2}, sqlstreams.Key(keys[1])),
			sqlstreams.NewMessage(event{N: 3}, sqlstreams.Key(keys[0])), sqlstreams.NewMessage(event{N: 4}, sqlstreams.Key(keys[1])))
		done <- result{ids, err}
	}()
	// Wait, bounded, until the batch waits for the lock the ProduceTx holds.
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := admin.QueryRowContext(testCtx(t), `SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the batch finished (%v, %v) while a ProduceTx held one of its partitions", r.ids, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch did not wait for the partition lock within 30s")
		}
		// InnoDB refreshes what INNODB_TRX shows only when it was last read
		// more than 0.1s ago: polling faster would never see the wait.
		time.Sleep(150 * time.Millisecond)
	}
	// While it waits it has taken no id: even uncommitted, the log holds
	// only the first row and the ProduceTx's.
	conn, err := admin.Conn(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(testCtx(t), `SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED`); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := conn.QueryRowContext(testCtx(t), fmt.Sprintf(`SELECT COUNT(*) FROM message_log_%d`, info.ID)).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("the log holds %d rows, uncommitted ones included, while the batch waits; want 2 (the batch inserted before it held its partitions)", rows)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.ids) != 3 || !slices.IsSorted(r.ids) || r.ids[0] <= held {
		t.Fatalf("batch ids %v after the ProduceTx's %d; want three increasing ids after it", r.ids, held)
	}
	if got := mysql.FoldedAppends(drv); mariadb != (got == 2) {
		t.Fatalf("MariaDB %v: %d appends ran as one compound statement; want two on MariaDB", mariadb, got)
	}

	// A lock wait that times out: ErrConflict, and the connection keeps
	// its lock wait timeout and has no transaction open.
	waiterDrv := mysql.Open(dsn, mysql.WithLockTimeout(time.Second))
	waiter, err := openClient(t, waiterDrv).Stream[event]("fold").Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	waiterDrv.DB().SetMaxOpenConns(1)
	var before int
	if err := waiterDrv.DB().QueryRowContext(testCtx(t), `SELECT @@session.innodb_lock_wait_timeout`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	tx2, err := drv.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	if _, err := p.ProduceTx(testCtx(t), mysql.Tx(tx2), event{N: 5}, sqlstreams.Key(keys[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := waiter.Produce(testCtx(t), event{N: 6}, sqlstreams.Key(keys[0])); !errors.Is(err, sqlstreams.ErrConflict) {
		t.Fatalf("produce while a ProduceTx holds the partition: %v; want ErrConflict", err)
	}
	var after, inTx int
	if err := waiterDrv.DB().QueryRowContext(testCtx(t), `SELECT @@session.innodb_lock_wait_timeout, @@in_transaction`).Scan(&after, &inTx); err != nil {
		t.Fatal(err)
	}
	if after != before || inTx != 0 {
		t.Errorf("after the lock wait timed out the connection has innodb_lock_wait_timeout %d (was %d) and in_transaction %d; want it as it was", after, before, inTx)
	}
	if err := tx2.Rollback(); err != nil {
		t.Fatal(err)
	}

	// The partitions are gone (a destroyed stream, appended to with its old
	// config): ErrStreamNotFound, nothing written.
	if _, err := admin.ExecContext(testCtx(t), `DELETE FROM stream_partition WHERE stream_id = ?`, info.ID); err != nil {
		t.Fatal(err)
	}
	cfg := driver.StreamConfig{ID: info.ID, Name: info.Name, Partitions: info.Partitions, CreatedAt: info.CreatedAt}
	if _, err := drv.Append(testCtx(t), driver.AppendParams{Stream: cfg, Rows: []driver.AppendRow{{SchemaVersion: 1, Payload: []byte(`{}`), ProducedAt: time.Now()}}}); !errors.Is(err, driver.ErrStreamNotFound) {
		t.Fatalf("append to a stream without partitions: %v; want ErrStreamNotFound", err)
	}
	if err := admin.QueryRowContext(testCtx(t), fmt.Sprintf(`SELECT COUNT(*) FROM message_log_%d`, info.ID)).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 5 {
		t.Errorf("the log holds %d rows after the refused append; want 5", rows)
	}
}
