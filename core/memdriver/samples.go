package memdriver

import (
	"context"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.SampleStore = (*Driver)(nil)

// RecordSample implements driver.SampleStore.
func (d *Driver) RecordSample(ctx context.Context, p driver.RecordSampleParams) (bool, error) {
	s := p.Sample
	s.At = micro(s.At)
	var stored bool
	err := d.write(ctx, nil, func(b *db) error {
		list := b.samples[s.StreamID]
		i, found := slices.BinarySearchFunc(list, s, func(a, t driver.Sample) int { return a.At.Compare(t.At) })
		if found {
			return nil
		}
		b.samples[s.StreamID], stored = slices.Insert(slices.Clone(list), i, s), true
		return nil
	})
	return stored, err
}

// ListSamples implements driver.SampleStore.
func (d *Driver) ListSamples(ctx context.Context, p driver.ListSamplesParams) ([]driver.Sample, error) {
	var out []driver.Sample
	err := d.read(ctx, func(b *db) error {
		list := b.samples[p.StreamID]
		list = list[since(list, p.Since):]
		if len(list) > p.Limit {
			list = list[len(list)-p.Limit:]
		}
		out = slices.Clone(list)
		return nil
	})
	return out, err
}

// PruneSamples implements driver.SampleStore.
func (d *Driver) PruneSamples(ctx context.Context, p driver.PruneSamplesParams) (int64, error) {
	var n int64
	err := d.write(ctx, nil, func(b *db) error {
		for id, list := range b.samples {
			var keep []driver.Sample
			if _, ok := b.streams[id]; ok { // a destroyed stream's samples all go
				keep = list[since(list, p.Before):]
			}
			n += int64(len(list) - len(keep))
			if len(keep) == 0 {
				delete(b.samples, id)
			} else {
				b.samples[id] = keep
			}
		}
		return nil
	})
	return n, err
}

// since is the index of the first of the samples, in time order, taken at
// or after t.
func since(samples []driver.Sample, t time.Time) int {
	i, _ := slices.BinarySearchFunc(samples, micro(t), func(s driver.Sample, t time.Time) int { return s.At.Compare(t) })
	return i
}
