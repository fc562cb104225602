package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// galeraState is what the driver knows of a Galera Cluster node (see the
// package documentation, "Galera Cluster"). The findings behind it, from
// .tests/scaleout on a 3-node cluster: GET_LOCK works on MariaDB 10.11
// Galera but only on its node; SELECT ... FOR UPDATE is node-local, so
// without the lock-row write a ProduceTx on node 1 holding id n commits
// after node 2's id n+2 was claimed past, and the group never gets it;
// SKIP LOCKED claims on two nodes both succeed locally and one fails
// certification at COMMIT.
type galeraState struct {
	on          atomic.Bool
	version     atomic.Value // string
	dsnSyncWait bool         // the DSN sets wsrep_sync_wait: leave it alone
}

// errGaleraNotReady is MariaDB's ER_UNKNOWN_COM_ERROR, which a Galera node
// outside the primary component answers to statements.
const (
	errGaleraNotReady = 1047
	errDuringCommit   = 1180
)

func init() {
	unavailableErrnos[errGaleraNotReady] = "the Galera node is not part of the cluster's primary component (it lost its peers or is still joining)"
}

// ServerInfo is what the driver learned about the server on its first
// connection.
type ServerInfo struct {
	// Version is VERSION().
	Version string
	// MariaDB tells MariaDB from MySQL.
	MariaDB bool
	// Galera is set when the server is a Galera Cluster node (wsrep_on);
	// see the package documentation for what the driver does then.
	Galera bool
}

// Server reports what the driver learned about the server; it is empty
// before the first connection (sqlstreams.Open makes one).
func (d *Driver) Server() ServerInfo {
	v, _ := d.gal.version.Load().(string)
	return ServerInfo{Version: v, MariaDB: d.mariadb.Load(), Galera: d.gal.on.Load()}
}

// dsnSetsParam reports whether the DSN's parameters set a system variable.
func dsnSetsParam(params map[string]string, name string) bool {
	for k := range params {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// detectCluster reads wsrep_on on a new connection (MySQL has no such
// variable: no row).
func (d *Driver) detectCluster(ctx context.Context, q sqldriver.QueryerContext, version string) error {
	d.gal.version.Store(version)
	rows, err := q.QueryContext(ctx, "SHOW VARIABLES LIKE 'wsrep_on'", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	v := make([]sqldriver.Value, len(rows.Columns()))
	on := false
	if err := rows.Next(v); err == nil && len(v) == 2 {
		on = strings.EqualFold(valueText(v[1]), "ON")
	} else if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	d.gal.on.Store(on)
	return nil
}

func valueText(x sqldriver.Value) string {
	if b, ok := x.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(x)
}

// galeraSession prepares a new connection to a Galera node: causal reads.
func (d *Driver) galeraSession(ctx context.Context, ex sqldriver.ExecerContext) error {
	if !d.gal.on.Load() || d.gal.dsnSyncWait {
		return nil
	}
	_, err := ex.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1", nil)
	return err
}

// orderAppendCluster writes the lock row of each partition an append wrote
// on Galera, raising high_water to the partition's newest id, so that the
// certifier sees concurrent appends to a partition from different nodes as
// conflicting (see galeraState). ids[i] is the id of rows[i]. A partition
// whose mark is already at or above the new id would not be written (the
// id went backwards, which only a commit out of order could cause): that
// is reported as a deadlock, and the driver's transaction runs again with
// fresh ids.
func (d *Driver) orderAppendCluster(ctx context.Context, q querier, streamID int64, rows []driver.AppendRow, ids []int64) error {
	if !d.gal.on.Load() {
		return nil
	}
	newest := map[int]int64{}
	for i, r := range rows {
		newest[r.Partition] = max(newest[r.Partition], ids[i])
	}
	for part, id := range newest {
		res, err := q.ExecContext(ctx, "UPDATE stream_partition SET high_water = ? WHERE stream_id = ? AND `partition` = ? AND high_water < ?",
			id, streamID, part, id)
		if err != nil {
			return fmt.Errorf("append to stream %d: order partition %d across the cluster: %w", streamID, part, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("append to stream %d: partition %d already has an id at or above %d: %w", streamID, part, id, errOutOfOrder)
		}
	}
	return nil
}

// errOutOfOrder makes the driver's transaction run again as after a
// deadlock (see orderAppendCluster).
var errOutOfOrder = errors.New("an id below the partition's high-water mark")

// galeraIDTaken reports an append whose AUTO_INCREMENT id another node's
// row took meanwhile (with wsrep_auto_increment_control OFF, every node
// counts from the same value): the applier inserted that row between this
// node's reservation of the id and its insert, which then fails on the
// primary key having written nothing. The driver's transaction runs again
// with a fresh id.
// The error is known by its code and where it came from, not by the
// server's words (MySQL 8 names the key 'message_log_3.PRIMARY', MariaDB
// 'PRIMARY').
func (d *Driver) galeraIDTaken(err error) bool {
	var li *logInsertError
	return d.gal.on.Load() && mysqlErrno(err) == errDupEntry && errors.As(err, &li)
}

// logInsertError is a failed INSERT into a stream's log. The log's only
// unique key is its primary key (logDDL), so a duplicate key there (1062)
// is an id taken.
type logInsertError struct {
	stream int64
	err    error
}

func (e *logInsertError) Error() string {
	return fmt.Sprintf("append to stream %d: %v", e.stream, e.err)
}
func (e *logInsertError) Unwrap() error { return e.err }

// The migration lock on Galera. GET_LOCK is node-local there, so two
// members starting at once on different nodes (a rolling deploy) would both
// apply a migration: each finds a column missing, and the second ALTER
// fails. The lock is a row instead, a write every node certifies: of two
// nodes inserting it at once, one commit fails certification (1213) and
// the other holds the lock. The row lives in the migrated database itself,
// so its name needs no database in it; an operator sees who migrates with
// SELECT * FROM sqlstreams_migration_lock. A holder that dies leaves its row
// behind until expires_at, which the holder pushes forward while it works.
const (
	migrationLockTable = "CREATE TABLE IF NOT EXISTS sqlstreams_migration_lock (" +
		"name VARCHAR(64) NOT NULL PRIMARY KEY, holder VARCHAR(128) NOT NULL, expires_at DATETIME(6) NOT NULL" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	migrationLockName = "migrate"
	// migrationLockTTL is how long a dead holder keeps others waiting; the
	// holder refreshes it every migrationLockTTL/4.
	migrationLockTTL = time.Minute
	// migrationLockPoll is how often a waiting member looks again.
	migrationLockPoll = 100 * time.Millisecond
)

// clusterMigrationLock takes the migration lock row, waiting up to wait
// (and no longer than ctx) while another member holds it, and returns the
// function that gives it back. While held, a goroutine of its own keeps the
// row's expiry ahead; release stops it before returning.
func (d *Driver) clusterMigrationLock(ctx context.Context, conn *sql.Conn, wait time.Duration) (release func(), err error) {
	if _, err := conn.ExecContext(ctx, migrationLockTable); err != nil {
		return nil, err
	}
	var token [12]byte
	_, _ = rand.Read(token[:])
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%.80s/%d/%x", host, os.Getpid(), token)
	// The statements run to their own bounds: ctx only says how long to
	// wait for another holder, and when it ends the answer is the conflict.
	stmt := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	}
	deadline := time.Now().Add(wait)
	for {
		now := time.Now()
		sctx, cancel := stmt()
		// A holder that died gave its row up when it expired.
		_, err := conn.ExecContext(sctx, `DELETE FROM sqlstreams_migration_lock WHERE name = ? AND expires_at < ?`, migrationLockName, ts(now))
		if err == nil || lockContended(err) {
			_, err = conn.ExecContext(sctx, `INSERT INTO sqlstreams_migration_lock (name, holder, expires_at) VALUES (?, ?, ?)`,
				migrationLockName, holder, ts(now.Add(migrationLockTTL)))
		}
		cancel()
		if err == nil {
			break
		}
		if !lockContended(err) {
			return nil, err
		}
		if now.After(deadline) || ctx.Err() != nil {
			var other, until string
			sctx, cancel := stmt()
			_ = conn.QueryRowContext(sctx, `SELECT holder, expires_at FROM sqlstreams_migration_lock WHERE name = ?`, migrationLockName).Scan(&other, &until)
			cancel()
			return nil, &driver.Error{Kind: driver.ErrConflict,
				Err:    fmt.Errorf("another member (%s) is migrating this database on the cluster; its lock expires at %s UTC unless it renews it", other, until),
				Advice: "retry when it is done; if that member is gone, its lock row in sqlstreams_migration_lock expires by itself"}
		}
		select {
		case <-ctx.Done():
		case <-time.After(migrationLockPoll):
		}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(migrationLockTTL / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// A failed renewal is tried again at the next tick; the
				// migration's own statements fail too if the node is gone.
				rctx, cancel := context.WithTimeout(context.Background(), migrationLockTTL/4)
				_, _ = d.db.ExecContext(rctx, `UPDATE sqlstreams_migration_lock SET expires_at = ? WHERE name = ? AND holder = ?`,
					ts(time.Now().Add(migrationLockTTL)), migrationLockName, holder)
				cancel()
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = d.db.ExecContext(rctx, `DELETE FROM sqlstreams_migration_lock WHERE name = ? AND holder = ?`, migrationLockName, holder)
	}, nil
}

// lockContended reports the errors of a lock row another node holds or is
// taking: a duplicate key, or a certification failure or deadlock.
func lockContended(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1062 || me.Number == 1213)
}
