package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Health implements driver.Driver (store.Health): the figures in a read
// transaction, the new rows counted in a write transaction, which the
// single writer orders against removals.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	return store.Health(ctx, p, sqldb.Over(d.reading), sqldb.Over(d.writing), "")
}
