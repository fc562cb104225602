package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordSample implements driver.SampleStore. IGNORE turns a second sample
// of the bucket into nothing (0 rows affected, where the no-op update of
// ON DUPLICATE KEY counts the row the driver's clientFoundRows finds); the
// values it could otherwise let through adjusted are ours: an id, a time
// written by ts and a JSON document.
func (d *Driver) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	s := p.Sample
	n, err := sqldb.Affected(d.exec(ctx, `INSERT IGNORE INTO stream_sample (`+sqldb.SampleColumns+`) VALUES (?, ?, ?)`,
		s.StreamID, ts(s.At), s.Figures))
	return n == 1, err
}

// ListSamples implements driver.SampleStore.
func (d *Driver) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := sqldb.Collect(ctx, d.db, `SELECT `+sqldb.SampleColumns+` FROM (SELECT `+sqldb.SampleColumns+` FROM stream_sample
		WHERE stream_id = ? AND sampled_at >= ? ORDER BY sampled_at DESC LIMIT ?) newest ORDER BY sampled_at`,
		[]any{p.StreamID, ts(p.Since), p.Limit},
		func(r driver.RowScanner) (driver.Sample, error) { return sqldb.ScanSample(r, utc) })
	return out, d.wrap(ctx, err, opRead)
}

// PruneSamples implements driver.SampleStore.
func (d *Driver) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	return sqldb.Affected(d.exec(ctx, `DELETE FROM stream_sample
		WHERE sampled_at < ? OR stream_id NOT IN (SELECT id FROM stream_config)`, ts(p.Before)))
}
