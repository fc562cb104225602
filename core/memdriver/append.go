package memdriver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Append implements driver.Driver. Ids are assigned with the writer held,
// so they become visible in id order (C5); in a caller transaction they
// become visible at its Commit, and a Rollback gives them back, as
// SQLite's AUTOINCREMENT does.
func (d *Driver) Append(ctx context.Context, p driver.AppendParams) ([]int64, error) {
	var ids []int64
	err := d.write(ctx, p.Tx, func(b *db) error {
		s, err := b.stream(p.Stream.ID)
		if err != nil {
			return err
		}
		if err := s.stale(p.Stream); err != nil {
			return err
		}
		for _, r := range p.Rows {
			if r.Partition < 0 || r.Partition >= len(s.parts) {
				return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("memdriver: stream %q has no partition %d", s.cfg.Name, r.Partition)}
			}
		}
		if s, err = b.writable(p.Stream.ID); err != nil {
			return err
		}
		ids = s.append(p.Rows)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// append stores rows and moves the compaction heads they win (C11). Rows
// that share their values (driver.SharesValues) share one copy of the
// headers, as the SQL drivers bind them once.
func (s *streamData) append(rows []driver.AppendRow) []int64 {
	ids := make([]int64, len(rows))
	shared := len(rows) > 1 && driver.SharesValues(rows)
	var headers map[string]string
	for i, in := range rows {
		if !shared || i == 0 {
			headers = maps.Clone(in.Headers)
			if len(headers) == 0 {
				headers = nil
			}
		}
		s.nextID++
		r := &row{Row: driver.Row{ID: s.nextID, Partition: in.Partition, SchemaVersion: in.SchemaVersion, Key: in.Key, HasKey: in.HasKey,
			RoutingKey: in.RoutingKey, CompactionRank: in.CompactionRank, Payload: slices.Clone(in.Payload), Headers: headers,
			ProducedAt: micro(in.ProducedAt)}, revision: in.SchemaRevision}
		if r.Payload == nil {
			r.Payload = []byte{}
		}
		s.rows[r.ID] = r
		s.ids = append(s.ids, r.ID)
		part := &s.parts[r.Partition]
		part.ids, part.high = append(part.ids, r.ID), r.ID
		ids[i] = r.ID
		if s.cfg.Compacted && r.HasKey {
			if h, ok := s.heads[r.Key]; !ok || wins(r, s.rows[h]) {
				s.heads[r.Key] = r.ID
			}
		}
	}
	return ids
}

// wins reports whether r takes its key's head from h: by (schema version,
// compaction rank, id) (C11).
func wins(r, h *row) bool {
	return cmp.Or(cmp.Compare(r.SchemaVersion, h.SchemaVersion), cmp.Compare(r.CompactionRank, h.CompactionRank), cmp.Compare(r.ID, h.ID)) > 0
}

// remove deletes rows from the log with every group's exceptions for them
// and the heads they were; the partitions keep their high-water marks.
func (s *streamData) remove(ids []int64) {
	if len(ids) == 0 {
		return
	}
	gone := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if r, ok := s.rows[id]; ok {
			gone[id] = true
			if r.HasKey && s.heads[r.Key] == id {
				delete(s.heads, r.Key)
			}
			delete(s.rows, id)
		}
	}
	s.ids = slices.DeleteFunc(s.ids, func(id int64) bool { return gone[id] })
	for i := range s.parts {
		s.parts[i].ids = slices.DeleteFunc(s.parts[i].ids, func(id int64) bool { return gone[id] })
	}
	for _, g := range s.groups {
		for id := range g.ex {
			if gone[id] {
				delete(g.ex, id)
			}
		}
	}
}
