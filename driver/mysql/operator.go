package mysql

import (
	"context"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// SetCursors implements driver.Driver. In one transaction it locks every
// cursor row of the group FOR UPDATE, in partition order as RegisterGroup
// does, waiting for claims in flight (bounded like an append's wait: FOR
// UPDATE WAIT n on MariaDB, innodb_lock_wait_timeout on MySQL, and not run
// again when it ends), materializes the group's batches on the partitions
// it moves, then sets the positions. Exceptions are not touched.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	return d.inTx(ctx, nil, func(tx querier) error {
		return sqldb.SetCursors(ctx, sqldb.On(tx), p, sqldb.CursorSteps{
			Lock: " FOR UPDATE" + d.waitClause(),
			Locked: func(err error) error {
				if lockWaitEnded(err) {
					return finalError{&driver.Error{Kind: driver.ErrConflict, Err: driver.Redact(fmt.Errorf("group %q: lock cursors: %w", p.Group, err), d.secrets...),
						Advice: "another transaction has held the group's cursors for the whole lock timeout (a claim holds one only briefly); retry"}}
				}
				return err
			},
			Release: func(parts []int) error {
				_, err := explodeWhole(ctx, tx, p.StreamID, "group_name = ? AND `partition` IN ("+sqldb.Placeholders(len(parts))+")",
					append([]any{p.Group}, sqldb.Args(parts)...), " FOR UPDATE")
				return err
			},
		})
	})
}

// ReadRows implements driver.Driver (store.ReadRows). No transaction:
// rows are read as committed when each window runs.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	if err := d.check(); err != nil {
		return driver.ReadRowsResult{}, err
	}
	var res driver.ReadRowsResult
	err := d.withLog(ctx, p.StreamID, func() (err error) {
		res, err = store.ReadRows(ctx, sqldb.On(d.db), p)
		return err
	})
	if mysqlErrno(err) == errNoSuchTable {
		return driver.ReadRowsResult{}, fmt.Errorf("mysql %s: stream %d: %w", d.where, p.StreamID, driver.ErrStreamNotFound)
	}
	if err != nil {
		return driver.ReadRowsResult{}, d.wrap(ctx, err, opRead)
	}
	return res, nil
}
