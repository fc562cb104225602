package memdriver

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Health implements driver.Driver, from the committed data only.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	err := d.read(ctx, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return err
		}
		st.HighWater = make([]int64, len(s.parts))
		for i, part := range s.parts {
			st.HighWater[i] = part.high
		}
		st.Versions = s.versionStats()
		st.Groups = s.groupStats()
		for _, g := range st.Groups {
			st.Unread = append(st.Unread, s.unread(s.groups[g.Name])...)
		}
		st.Exceptions, st.Holders = s.exceptionStats()
		return nil
	})
	return st, err
}

// versionStats counts rows and heads per version.
func (s *streamData) versionStats() []driver.VersionStats {
	at := map[int]*driver.VersionStats{}
	get := func(v int) *driver.VersionStats {
		if at[v] == nil {
			at[v] = &driver.VersionStats{Version: v}
		}
		return at[v]
	}
	for _, r := range s.rows {
		get(r.SchemaVersion).Rows++
	}
	for _, id := range s.heads {
		get(s.rows[id].SchemaVersion).Heads++
	}
	out := make([]driver.VersionStats, 0, len(at))
	for _, v := range at {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b driver.VersionStats) int { return cmp.Compare(a.Version, b.Version) })
	return out
}

// groupStats returns each group's configuration, cursors and counter, by
// name.
func (s *streamData) groupStats() []driver.GroupStats {
	out := make([]driver.GroupStats, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, driver.GroupStats{GroupConfig: g.cfg, Cursors: slices.Clone(g.cursors), RemovedUnread: g.removedUnread})
	}
	slices.SortFunc(out, func(a, b driver.GroupStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// unread counts a group's claimable rows past its cursors that it holds no
// exception for, per (partition, version, routing key).
func (s *streamData) unread(g *groupData) []driver.UnreadCount {
	var out []driver.UnreadCount
	for part, cursor := range g.cursors {
		if part >= len(s.parts) {
			break
		}
		counts := map[driver.UnreadCount]int64{}
		for _, id := range s.parts[part].after(cursor) {
			r := s.rows[id]
			if _, held := g.ex[id]; held || !s.isHead(r) {
				continue
			}
			counts[driver.UnreadCount{Group: g.cfg.Name, Partition: part, Version: r.SchemaVersion, RoutingKey: r.RoutingKey}]++
		}
		for k, n := range counts {
			k.Rows = n
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b driver.UnreadCount) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Version, b.Version), strings.Compare(a.RoutingKey, b.RoutingKey))
	})
	return out
}

// exceptionStats counts unresolved deliveries per (group, version, state)
// and leases per (group, holder).
func (s *streamData) exceptionStats() ([]driver.ExceptionCount, []driver.HolderCount) {
	type holderKey struct{ group, holder string }
	counts := map[driver.ExceptionCount]int64{}
	holders := map[holderKey]driver.HolderCount{}
	for _, g := range s.groups {
		for _, e := range g.ex {
			counts[driver.ExceptionCount{Group: g.cfg.Name, Version: e.version, State: e.state}]++
			if e.state != driver.StateLeased {
				continue
			}
			k := holderKey{g.cfg.Name, e.holder}
			h := holders[k]
			h.Group, h.Holder, h.Leases = k.group, k.holder, h.Leases+1
			if e.due.After(h.Until) {
				h.Until = e.due
			}
			holders[k] = h
		}
	}
	var ex []driver.ExceptionCount
	for k, n := range counts {
		k.Count = n
		ex = append(ex, k)
	}
	slices.SortFunc(ex, func(a, b driver.ExceptionCount) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), strings.Compare(string(a.State), string(b.State)))
	})
	var hs []driver.HolderCount
	for _, h := range holders {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b driver.HolderCount) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Holder, b.Holder))
	})
	return ex, hs
}

// Compact implements driver.Driver: rows that are no longer heads go, in id
// order, with their exceptions; heads never do (C11).
func (d *Driver) Compact(ctx context.Context, p driver.CompactParams) (int64, error) {
	var removed int64
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(p.StreamID)
		if err != nil || !s.cfg.Compacted {
			return err
		}
		var ids []int64
		for _, id := range s.ids {
			if len(ids) >= p.Limit {
				break
			}
			if !s.isHead(s.rows[id]) {
				ids = append(ids, id)
			}
		}
		s.remove(ids)
		removed = int64(len(ids))
		return nil
	})
	return removed, err
}

// Retain implements driver.Driver (C14): the line is drawn by
// driver.RetainBound, and a hard limit's unread rows are counted by
// driver.CountRemovedUnread, as on every engine.
func (d *Driver) Retain(ctx context.Context, p driver.RetainParams) (driver.RetainResult, error) {
	res := driver.RetainResult{RemovedUnread: map[string]int64{}}
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(p.StreamID)
		if err != nil {
			return err
		}
		r := s.cfg.Retention
		if r.MaxAge <= 0 && r.MaxRows <= 0 {
			return nil
		}
		bound, err := driver.RetainBound(r, p.Now, s.probe())
		if err != nil || bound == 0 {
			return err
		}
		victims := s.retainCandidates(bound, p.Limit)
		if len(victims) == 0 {
			return nil
		}
		ids := make([]int64, len(victims))
		for i, v := range victims {
			ids[i] = v.ID
		}
		if r.Hard {
			held := map[string]map[int64]bool{}
			for _, g := range s.groups {
				for _, id := range ids {
					if _, ok := g.ex[id]; ok {
						if held[g.cfg.Name] == nil {
							held[g.cfg.Name] = map[int64]bool{}
						}
						held[g.cfg.Name][id] = true
					}
				}
			}
			res.RemovedUnread = driver.CountRemovedUnread(s.groupStats(), victims, held, p.Match)
			for name, n := range res.RemovedUnread {
				s.groups[name].removedUnread += n
			}
		}
		res.Removed = int64(len(ids))
		s.remove(ids)
		return nil
	})
	return res, err
}

// retainCandidates lists up to limit rows below bound that retention may
// remove: under a soft limit only rows every group has passed and holds no
// exception for.
func (s *streamData) retainCandidates(bound int64, limit int) []driver.RetainCandidate {
	var out []driver.RetainCandidate
	for _, id := range s.ids {
		if id >= bound || len(out) >= limit {
			break
		}
		r := s.rows[id]
		if !s.cfg.Retention.Hard && !s.resolvedByAll(r) {
			continue
		}
		out = append(out, driver.RetainCandidate{ID: id, Partition: r.Partition, Version: r.SchemaVersion, RoutingKey: r.RoutingKey})
	}
	return out
}

// resolvedByAll reports whether every group's cursor has passed r and no
// group holds an exception for it.
func (s *streamData) resolvedByAll(r *row) bool {
	for _, g := range s.groups {
		if _, held := g.ex[r.ID]; held || r.Partition >= len(g.cursors) || g.cursors[r.Partition] < r.ID {
			return false
		}
	}
	return true
}

// probe answers RetainBound's questions from the log's ids.
func (s *streamData) probe() driver.RetentionProbe {
	return driver.RetentionProbe{
		Span: func() (int64, int64, bool, error) {
			if len(s.ids) == 0 {
				return 0, 0, false, nil
			}
			return s.ids[0], s.ids[len(s.ids)-1], true, nil
		},
		FirstYoung: func(t time.Time) (int64, bool, error) {
			t = micro(t)
			for _, id := range s.ids {
				if !s.rows[id].ProducedAt.Before(t) {
					return id, true, nil
				}
			}
			return 0, false, nil
		},
		NthNewest: func(n int64) (int64, bool, error) {
			if n >= int64(len(s.ids)) {
				return 0, false, nil
			}
			return s.ids[int64(len(s.ids))-1-n], true, nil
		},
	}
}
