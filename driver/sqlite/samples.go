package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordSample implements driver.SampleStore, in the one writer's
// transaction: ON CONFLICT DO NOTHING turns another process's sample of the
// bucket into no row.
func (d *Driver) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	s := p.Sample
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		n, err = sqldb.Affected(tx.ExecContext(ctx, `INSERT INTO stream_sample (`+sqldb.SampleColumns+`) VALUES (?, ?, ?)
			ON CONFLICT (stream_id, sampled_at) DO NOTHING`, s.StreamID, micros(s.At), s.Figures))
		return err
	})
	return n > 0, err
}

// ListSamples implements driver.SampleStore.
func (d *Driver) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	var out []driver.Sample
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqldb.Collect(ctx, tx, `SELECT `+sqldb.SampleColumns+` FROM (SELECT `+sqldb.SampleColumns+` FROM stream_sample
			WHERE stream_id = ? AND sampled_at >= ? ORDER BY sampled_at DESC LIMIT ?) newest ORDER BY sampled_at`,
			[]any{p.StreamID, micros(p.Since), p.Limit},
			func(r driver.RowScanner) (driver.Sample, error) { return sqldb.ScanSample(r, fromMicros) })
		return err
	})
	return out, err
}

// PruneSamples implements driver.SampleStore.
func (d *Driver) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		n, err = sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM stream_sample
			WHERE sampled_at < ? OR stream_id NOT IN (SELECT id FROM stream_config)`, micros(p.Before)))
		return err
	})
	return n, err
}
