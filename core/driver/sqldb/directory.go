package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The client directory (driver.ClientDirectory) and the samples
// (driver.SampleStore) are tables both engines define alike: their
// statements are the same but for the upserts (Store.UpsertClient,
// Store.InsertSample) and how a time is stored.

// RecordClient implements driver.ClientDirectory.RecordClient on q.
func (s Store[T]) RecordClient(ctx context.Context, q Runner, p driver.RecordClientParams) error {
	c := p.Client
	_, err := q.Exec(ctx, `INSERT INTO client_heartbeat (`+ClientColumns+`) VALUES (`+Placeholders(10)+`) `+s.UpsertClient,
		c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), s.Time(c.StartedAt),
		s.Time(c.LastSeen), c.HeartbeatEvery.Microseconds(), driver.TimeOrNull(c.ClosedAt, s.Time))
	return err
}

// ListClients implements driver.ClientDirectory.ListClients on q.
func (s Store[T]) ListClients(ctx context.Context, q Runner, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	return collectOn(ctx, q, `SELECT `+ClientColumns+` FROM client_heartbeat ORDER BY instance`, nil,
		func(r driver.RowScanner) (driver.ClientRecord, error) { return driver.ScanClient(r, s.At) })
}

// PruneClients implements driver.ClientDirectory.PruneClients on q.
func (s Store[T]) PruneClients(ctx context.Context, q Runner, p driver.PruneClientsParams) (int64, error) {
	return q.Exec(ctx, `DELETE FROM client_heartbeat WHERE last_seen < ?`, s.Time(p.Before))
}

// RecordSample implements driver.SampleStore.RecordSample on q.
func (s Store[T]) RecordSample(ctx context.Context, q Runner, p driver.RecordSampleParams) (bool, error) {
	n, err := q.Exec(ctx, s.InsertSample, p.Sample.StreamID, s.Time(p.Sample.At), p.Sample.Figures)
	return n > 0, err
}

// ListSamples implements driver.SampleStore.ListSamples on q: the newest
// p.Limit since p.Since, oldest first.
func (s Store[T]) ListSamples(ctx context.Context, q Runner, p driver.ListSamplesParams) ([]driver.Sample, error) {
	return collectOn(ctx, q, `SELECT `+SampleColumns+` FROM (SELECT `+SampleColumns+` FROM stream_sample
		WHERE stream_id = ? AND sampled_at >= ? ORDER BY sampled_at DESC LIMIT ?) newest ORDER BY sampled_at`,
		[]any{p.StreamID, s.Time(p.Since), p.Limit},
		func(r driver.RowScanner) (driver.Sample, error) { return ScanSample(r, s.At) })
}

// PruneSamples implements driver.SampleStore.PruneSamples on q: samples
// older than p.Before and those of streams that are gone.
func (s Store[T]) PruneSamples(ctx context.Context, q Runner, p driver.PruneSamplesParams) (int64, error) {
	return q.Exec(ctx, `DELETE FROM stream_sample
		WHERE sampled_at < ? OR stream_id NOT IN (SELECT id FROM stream_config)`, s.Time(p.Before))
}

// Directory is the client directory and the samples on a Store, run in a
// driver's scopes: Write for the statements that change rows (each commits
// on its own), Read for the reads. A driver embeds one and so implements
// driver.ClientDirectory and driver.SampleStore without writing the six
// methods again.
type Directory[T any] struct {
	Store       Store[T]
	Write, Read Scope
}

// RecordClient implements driver.ClientDirectory.
func (d Directory[T]) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	return d.Write(ctx, func(r Runner) error { return d.Store.RecordClient(ctx, r, p) })
}

// ListClients implements driver.ClientDirectory.
func (d Directory[T]) ListClients(ctx context.Context, p driver.ListClientsParams) ([]driver.ClientRecord, error) {
	return In(ctx, d.Read, d.Store.ListClients, p)
}

// PruneClients implements driver.ClientDirectory.
func (d Directory[T]) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	return In(ctx, d.Write, d.Store.PruneClients, p)
}

// RecordSample implements driver.SampleStore (Store.InsertSample).
func (d Directory[T]) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	return In(ctx, d.Write, d.Store.RecordSample, p)
}

// ListSamples implements driver.SampleStore.
func (d Directory[T]) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	return In(ctx, d.Read, d.Store.ListSamples, p)
}

// PruneSamples implements driver.SampleStore.
func (d Directory[T]) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	return In(ctx, d.Write, d.Store.PruneSamples, p)
}
