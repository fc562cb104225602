package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// PauseGroup implements driver.GroupPauser (store.PauseGroup): the group
// row and its cursors are locked FOR UPDATE, in RegisterGroup's order.
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	return d.inTx(ctx, nil, func(tx querier) error { return store.PauseGroup(ctx, sqldb.On(tx), p, " FOR UPDATE"+d.waitClause()) })
}
