package memdriver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// CreateStream implements driver.Driver.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	cfg := p.Config
	cfg.CreatedAt = micro(cfg.CreatedAt)
	cfg.Retention.MaxAge = cfg.Retention.MaxAge.Truncate(time.Microsecond)
	err := d.write(ctx, nil, func(b *db) error {
		if _, taken := b.byName[cfg.Name]; taken {
			return fmt.Errorf("memdriver: stream %q: %w", cfg.Name, driver.ErrStreamExists)
		}
		b.nextStream++
		cfg.ID = b.nextStream
		b.streams[cfg.ID], b.byName[cfg.Name] = newStream(cfg), cfg.ID
		if b.owned != nil {
			b.owned[cfg.ID] = true
		}
		return nil
	})
	return cfg, err
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	var out driver.StreamConfig
	err := d.read(ctx, func(b *db) error {
		id, ok := b.byName[p.Name]
		if !ok {
			return fmt.Errorf("memdriver: stream %q: %w", p.Name, driver.ErrStreamNotFound)
		}
		out = b.streams[id].cfg
		return nil
	})
	return out, err
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, _ driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	var out []driver.StreamConfig
	err := d.read(ctx, func(b *db) error {
		for _, s := range b.streams {
			out = append(out, s.cfg)
		}
		slices.SortFunc(out, func(a, b driver.StreamConfig) int { return strings.Compare(a.Name, b.Name) })
		return nil
	})
	return out, err
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(p.StreamID)
		if err != nil {
			return err
		}
		if id, taken := b.byName[p.NewName]; taken && id != p.StreamID {
			return fmt.Errorf("memdriver: stream %q: %w", p.NewName, driver.ErrStreamExists)
		}
		delete(b.byName, s.cfg.Name)
		s.cfg.Name = p.NewName
		b.byName[p.NewName] = s.cfg.ID
		return nil
	})
}

// DestroyStream implements driver.Driver. Global schema ids stay (they
// are never reused).
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	return d.write(ctx, nil, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return err
		}
		delete(b.byName, s.cfg.Name)
		delete(b.streams, p.StreamID)
		maps.DeleteFunc(b.settings, func(k scopeKey, _ driver.RegistrySettings) bool { return k.stream == p.StreamID })
		return nil
	})
}

// RegisterGroup implements driver.Driver. It runs with the writer held, so
// no claim is in flight while it changes a group (C19).
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	var out driver.GroupConfig
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.stream(p.Group.StreamID)
		if err != nil {
			return err
		}
		if g, ok := s.groups[p.Group.Name]; ok {
			out = g.cfg
			if p.Update == nil {
				return nil
			}
			next, err := p.Update(g.cfg)
			if err != nil {
				return err
			}
			out.Bindings, out.ConvertsFrom = nilIfEmpty(slices.Clone(next.Bindings)), nilIfEmpty(slices.Clone(next.ConvertsFrom))
			if s, err = b.writable(s.cfg.ID); err != nil {
				return err
			}
			s.groups[out.Name].cfg = out
			return nil
		}
		out = p.Group
		out.Bindings, out.ConvertsFrom = nilIfEmpty(slices.Clone(out.Bindings)), nilIfEmpty(slices.Clone(out.ConvertsFrom))
		out.CreatedAt = micro(out.CreatedAt)
		var start int64
		if out.Start == driver.StartLatest && len(s.ids) > 0 {
			start = s.ids[len(s.ids)-1]
		}
		g := &groupData{cfg: out, cursors: make([]int64, s.cfg.Partitions), ex: map[int64]exception{}}
		for i := range g.cursors {
			g.cursors[i] = start
		}
		if s, err = b.writable(s.cfg.ID); err != nil {
			return err
		}
		s.groups[out.Name] = g
		return nil
	})
	return out, err
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	var out []driver.GroupConfig
	err := d.read(ctx, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return nil // as a SQL driver: no rows
		}
		for _, g := range s.groups {
			out = append(out, g.cfg)
		}
		slices.SortFunc(out, func(a, b driver.GroupConfig) int { return strings.Compare(a.Name, b.Name) })
		return nil
	})
	return out, err
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	return d.write(ctx, nil, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return fmt.Errorf("memdriver: group %q: %w", p.Group, driver.ErrGroupNotFound)
		}
		if _, err := s.group(p.Group); err != nil {
			return err
		}
		if s, err = b.writable(p.StreamID); err != nil {
			return err
		}
		delete(s.groups, p.Group)
		for k := range s.readers {
			if k.group == p.Group {
				delete(s.readers, k)
			}
		}
		return nil
	})
}

// SetCursors implements driver.Driver.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	return d.write(ctx, nil, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return fmt.Errorf("memdriver: group %q: %w", p.Group, driver.ErrGroupNotFound)
		}
		g, err := s.group(p.Group)
		if err != nil {
			return err
		}
		for part := range p.Positions {
			if part < 0 || part >= len(g.cursors) {
				return fmt.Errorf("memdriver: group %q has no partition %d: %w", p.Group, part, driver.ErrGroupNotFound)
			}
		}
		if s, err = b.writable(p.StreamID); err != nil {
			return err
		}
		for part, pos := range p.Positions {
			s.groups[p.Group].cursors[part] = pos
		}
		return nil
	})
}

// ReadRows implements driver.Driver.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	var res driver.ReadRowsResult
	maxScan := p.MaxScan
	if maxScan <= 0 {
		maxScan = p.Limit
	}
	err := d.read(ctx, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return err
		}
		ids := s.ids
		if p.Partition >= 0 {
			if p.Partition >= len(s.parts) {
				return nil
			}
			ids = s.parts[p.Partition].ids
		}
		lo, _ := slices.BinarySearch(ids, p.AfterID+1)
		hi := len(ids)
		if p.BeforeID > 0 {
			hi, _ = slices.BinarySearch(ids, p.BeforeID)
		}
		ids = slices.Clone(ids[lo:max(lo, hi)])
		if p.Descending {
			slices.Reverse(ids)
		}
		scanned := 0
		for _, id := range ids[:min(len(ids), maxScan)] {
			if len(res.Rows) >= p.Limit {
				res.Last = res.Rows[len(res.Rows)-1].ID
				return nil
			}
			r := s.rows[id]
			scanned++
			res.Last = id
			if (p.Versions == nil || slices.Contains(p.Versions, r.SchemaVersion)) && (!p.HasKey || (r.HasKey && r.Key == p.Key)) {
				res.Rows = append(res.Rows, r.out())
			}
		}
		res.Done = scanned < maxScan
		return nil
	})
	return res, err
}

// out returns a copy of the row for a caller, who may change it.
func (r *row) out() driver.Row {
	o := r.Row
	o.Payload = slices.Clone(r.Payload)
	if r.Headers != nil {
		o.Headers = make(map[string]string, len(r.Headers))
		for k, v := range r.Headers {
			o.Headers[k] = v
		}
	}
	return o
}
