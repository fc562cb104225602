package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordClient implements driver.ClientDirectory: one statement that
// commits on its own.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	return d.autocommit(ctx, func(q querier) error { return store.RecordClient(ctx, sqldb.On(q), p) })
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, p driver.ListClientsParams) ([]driver.ClientRecord, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), store.ListClients, p)
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	return sqldb.In(ctx, sqldb.Over(d.autocommit), store.PruneClients, p)
}
