package postgres

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordSample implements driver.SampleStore (store.InsertSample).
func (d *Driver) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	return sqldb.In(ctx, d.autocommit, store.RecordSample, p)
}

// ListSamples implements driver.SampleStore.
func (d *Driver) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	return sqldb.In(ctx, d.pooled, store.ListSamples, p)
}

// PruneSamples implements driver.SampleStore.
func (d *Driver) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	return sqldb.In(ctx, d.autocommit, store.PruneSamples, p)
}
