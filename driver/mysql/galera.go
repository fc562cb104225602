package mysql

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Galera Cluster (MariaDB with wsrep_on) replicates every transaction to all
// nodes synchronously and decides at COMMIT, by certification, whether it
// conflicts with one committed meanwhile on another node: only rows a
// transaction wrote take part, not the rows it locked. What that changes
// for the driver, found by .tests/scaleout against a 3-node cluster:
//
//   - The append lock (SELECT ... FOR UPDATE on stream_partition) is
//     node-local. Two nodes appending to one partition do not wait for each
//     other, and a row whose transaction took a lower id on node 1 could
//     commit after a row with a higher id from node 2 had been claimed past:
//     the group would skip it (C5). On Galera every append therefore also
//     writes the partition's lock row (it raises high_water, the highest id
//     the partition has had, to its newest id), which puts that row in the
//     write set: of two concurrent appends to a partition on different nodes
//     the second to commit fails certification and rolls back whole (error
//     1213). The driver runs its own transaction again; a transaction passed
//     to ProduceTx fails at the caller's COMMIT with that error, to be run
//     again. The id of a row that commits is then always above every id its
//     partition committed before it, on every node, so a claim reading
//     "id > cursor" on any node sees a gap-free prefix.
//   - Claims lock cursor rows FOR UPDATE SKIP LOCKED, also node-local: two
//     nodes may both lease past one cursor, and both write the cursor row,
//     so one fails certification at COMMIT (1213) and is run again. Settles
//     and re-leases of due exceptions write the exception row, and conflict
//     the same way. A lease is therefore never held twice.
//   - GET_LOCK works on MariaDB 10.11 Galera but is node-local: Migrate's
//     lock serializes migrations started on one node only. Run Migrate from
//     one place at a time (a deploy step), or start nodes' processes one
//     after another on first install.
//   - Reads on a node may lag what another node committed. The driver sets
//     wsrep_sync_wait = 1 on each session unless the DSN sets
//     wsrep_sync_wait itself, so that a group registered through one node is
//     found by a claim through another, and a read sees every transaction
//     committed before it started anywhere in the cluster.
//   - A node outside the primary component refuses statements with error
//     1047 (WSREP has not yet prepared node for application use): that is
//     ErrUnavailable, and Run backs off until the node rejoins or the
//     client's DSN points elsewhere. A COMMIT that fails with 1180 (the node
//     lost the cluster during commit) may have been applied by the others:
//     ErrOutcomeUnknown.
//
// Galera needs InnoDB tables with primary keys (every table of the driver
// has one), binlog_format=ROW and innodb_autoinc_lock_mode=2, where the
// driver reads the ids of a multi-row INSERT back.
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
