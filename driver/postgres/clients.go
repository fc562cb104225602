package postgres

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordClient implements driver.ClientDirectory (store.RecordClient).
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	return d.autocommit(ctx, func(q sqldb.Runner) error { return store.RecordClient(ctx, q, p) })
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, p driver.ListClientsParams) ([]driver.ClientRecord, error) {
	return sqldb.In(ctx, d.pooled, store.ListClients, p)
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	return sqldb.In(ctx, d.autocommit, store.PruneClients, p)
}
