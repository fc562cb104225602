package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// PauseGroup implements driver.GroupPauser (store.PauseGroup). The single
// writer orders it against claims: none is in flight while it writes, and
// its reads take no lock.
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	return d.writing(ctx, func(tx querier) error { return store.PauseGroup(ctx, sqldb.On(tx), p, "") })
}
