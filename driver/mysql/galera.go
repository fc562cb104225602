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
func (d *Driver) galeraIDTaken(err error) bool {
	return d.gal.on.Load() && mysqlErrno(err) == errDupEntry && strings.HasPrefix(err.Error(), "append to stream ") &&
		strings.Contains(err.Error(), "for key 'PRIMARY'")
}
