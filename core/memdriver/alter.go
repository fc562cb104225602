package memdriver

import (
	"context"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.Alterer = (*Driver)(nil)

// AlterStream implements driver.Alterer. It runs with the writer held, so
// no append or claim is in flight while the configuration changes, and the
// next ones compare their generation with the new one.
func (d *Driver) AlterStream(ctx context.Context, p driver.AlterStreamParams) (driver.StreamConfig, error) {
	var out driver.StreamConfig
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return err
		}
		next, err := driver.Altered(s.cfg, p)
		if err != nil {
			return err
		}
		if s, err = b.writable(p.StreamID); err != nil {
			return err
		}
		// New partitions start empty; every group's cursor there is at the
		// start, so nothing written to them is passed over.
		for len(s.parts) < next.Partitions {
			s.parts = append(s.parts, partition{})
		}
		for _, g := range s.groups {
			for len(g.cursors) < next.Partitions {
				g.cursors = append(g.cursors, 0)
			}
		}
		switch {
		case next.Compacted && !s.cfg.Compacted:
			s.heads = map[string]int64{}
			for _, id := range s.ids {
				r := s.rows[id]
				if h, ok := s.heads[r.Key]; r.HasKey && (!ok || wins(r, s.rows[h])) {
					s.heads[r.Key] = id
				}
			}
		case !next.Compacted:
			s.heads = map[string]int64{}
		}
		s.cfg, out = next, next
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("memdriver: alter stream %d: %w", p.StreamID, err)
	}
	return out, nil
}

// stale refuses a call planned with another generation of the stream's
// configuration than the stored one.
func (s *streamData) stale(used driver.StreamConfig) error {
	return driver.Stale(used, s.cfg)
}
