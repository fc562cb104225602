package postgres

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// PauseGroup implements driver.GroupPauser (store.PauseGroup): the group
// row, then every cursor of the group (waiting for claims in flight, which
// hold one), as RegisterGroup locks them for a configuration change (C19).
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	return d.bounded(ctx, func(tx sqldb.Runner) error { return store.PauseGroup(ctx, tx, p, ` FOR UPDATE`) })
}
