package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

func loadGroups(ctx context.Context, tx pgx.Tx, stream driver.StreamConfig) ([]driver.GroupStats, error) {
	return store.LoadGroups(ctx, runner{tx}, stream, "")
}

// Health implements driver.Driver (store.Health): the figures in one
// snapshot (a read-only repeatable read transaction), the new rows
// counted in a transaction that first locks the stream's configuration
// row (lockCounts), bounded by the lock timeout.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	snapshot := func(ctx context.Context, fn func(sqldb.Runner) error) error {
		return d.reading(ctx, func(tx sqldb.Runner) error {
			if _, err := tx.Exec(ctx, healthSettings); err != nil {
				return err
			}
			return fn(tx)
		})
	}
	counting := func(ctx context.Context, fn func(sqldb.Runner) error) error {
		return d.writing(ctx, func(tx sqldb.Runner) error {
			if _, err := tx.Exec(ctx, healthSettings); err != nil {
				return err
			}
			if lt := d.lockTimeoutValue(); lt != "" {
				if _, err := tx.Exec(ctx, setLockTimeout, lt); err != nil {
					return err
				}
			}
			return fn(tx)
		})
	}
	return store.Health(ctx, p, snapshot, counting, " FOR NO KEY UPDATE")
}

// healthSettings are those of Health's transactions. The statements are
// short, but the planner's estimates for a stream's log it has no
// statistics of (a new table, not yet analyzed) pass jit_above_cost, and
// compiling costs 15 ms a read; and they hand the reads of the rows past
// the row count marks (index ranges that are empty once counted) to
// parallel workers, whose start costs more than the reads.
const healthSettings = `SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`

// unreadCounts is store.Unread: the rows past each group's cursors, by
// partition, version and routing key. The rows past a cursor are a range
// of the (partition, id) index (LATERAL with the aggregate inside, so that
// the planner cannot pull the subquery up into a join of the whole log).
// Rows past the cursor that the group has an exception for (a cursor moved
// back over them) count as exceptions, not as unread; only below the
// group's newest exception of the partition past the cursor (a range of
// the primary key) can there be such rows, so only there is each row
// looked up (an anti-join of the whole backlog with the exceptions is what
// a planner without statistics picks, at backlog times exceptions).
func unreadCounts(stream driver.StreamConfig) (string, []any) {
	return `SELECT c.group_name, c.partition, m.schema_version, m.routing_key, m.n
		FROM group_cursor c
		CROSS JOIN LATERAL (SELECT max(e.msg_id) AS newest FROM delivery_exception e
			WHERE e.stream_id = c.stream_id AND e.group_name = c.group_name AND e.msg_id > c.position AND e.partition = c.partition) x
		CROSS JOIN LATERAL (SELECT m.schema_version, m.routing_key, count(*) AS n FROM ` + logTable(stream.ID) + ` m
			WHERE m.partition = c.partition AND m.id > c.position AND ` + headExpr(stream) + `
				AND (m.id > COALESCE(x.newest, 0)
					OR NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = c.stream_id AND e.group_name = c.group_name AND e.msg_id = m.id))
			GROUP BY m.schema_version, m.routing_key) m
		WHERE c.stream_id = ?
		ORDER BY 1, 2, 3, 4`, []any{stream.ID}
}
