package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RecordSample implements driver.SampleStore: ON CONFLICT DO NOTHING turns
// a second client's sample of the bucket into no row, without an error that
// would abort the transaction.
func (d *Driver) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	s := p.Sample
	var stored bool
	err := d.write(ctx, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, `INSERT INTO stream_sample (stream_id, sampled_at, figures)
			VALUES ($1::bigint, $2::timestamptz, $3::jsonb) ON CONFLICT (stream_id, sampled_at) DO NOTHING`,
			s.StreamID, ts(s.At), s.Figures)
		stored = tag.RowsAffected() == 1
		return err
	})
	return stored, err
}

// ListSamples implements driver.SampleStore.
func (d *Driver) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	var out []driver.Sample
	err := d.read(ctx, func() error {
		out = nil
		return eachRow(ctx, d.pool, `SELECT stream_id, sampled_at, figures::text FROM (SELECT stream_id, sampled_at, figures
			FROM stream_sample WHERE stream_id = $1::bigint AND sampled_at >= $2::timestamptz
			ORDER BY sampled_at DESC LIMIT $3::integer) newest ORDER BY sampled_at`,
			[]any{p.StreamID, ts(p.Since), p.Limit}, func(r pgx.Rows) error {
				var s driver.Sample
				if err := r.Scan(&s.StreamID, &s.At, &s.Figures); err != nil {
					return err
				}
				s.At = s.At.UTC()
				out = append(out, s)
				return nil
			})
	})
	return out, err
}

// PruneSamples implements driver.SampleStore.
func (d *Driver) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	var n int64
	err := d.write(ctx, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, `DELETE FROM stream_sample
			WHERE sampled_at < $1::timestamptz OR stream_id NOT IN (SELECT id FROM stream_config)`, ts(p.Before))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
