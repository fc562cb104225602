package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordClient implements driver.ClientDirectory.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	return d.writing(ctx, func(tx querier) error { return store.RecordClient(ctx, sqldb.On(tx), p) })
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, p driver.ListClientsParams) ([]driver.ClientRecord, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), store.ListClients, p)
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	return sqldb.In(ctx, sqldb.Over(d.writing), store.PruneClients, p)
}
