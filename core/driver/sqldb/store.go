package sqldb

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Store is the bookkeeping of streams and groups and the reads around them
// (Health, dead letters, the client directory, samples, the operator API)
// as MySQL and SQLite do them alike, run on a transaction (or connection)
// the driver opens: the driver keeps its transactions, retries, locks
// (passed as clauses where a read takes them) and error classification, and
// passes the few statements whose text differs. It runs on a Runner, so
// PostgreSQL runs it too (its runner writes the backquoted `partition` of
// the shared statements as "partition"). T is how the engine stores a
// time (SQLite: microseconds, MySQL: DATETIME(6), PostgreSQL: timestamptz
// as a time.Time).
type Store[T any] struct {
	// Time turns a time into the stored value, At reads one back.
	Time func(time.Time) any
	At   func(T) time.Time
	// Head is the predicate that row m is claimable: on a compacted
	// stream, only a head.
	Head func(driver.StreamConfig) string
	// HighWaters reads rows of (partition, id), NULL for none, whose
	// greatest per partition is its high-water mark: the newest row's id,
	// or the mark compaction and retention left when they removed it.
	HighWaters func(driver.StreamConfig) (string, []any)
	// ExceptionCounts reads rows of (group, version, state, count), batch
	// members as leased at their rows' versions; HolderCounts rows of
	// (group, holder, leases, when the last lease ends), batch members
	// included. Both take the stream id twice.
	ExceptionCounts, HolderCounts func(streamID int64) string
	// Unread, when set, reads the unread rows of every group of the stream
	// in one statement, rows of (group, partition, version, routing key,
	// count), as Store's reads of each group's partitions count them; nil
	// reads them group by group.
	Unread func(driver.StreamConfig) (string, []any)
	// AddRowCounts follows a multi-row INSERT INTO row_count and adds the
	// counts to existing rows; MoveMarks follows one INTO row_count_mark
	// and keeps the greater mark.
	AddRowCounts, MoveMarks string
	// UpsertClient follows the INSERT of a client_heartbeat row and
	// replaces every column of an existing one.
	UpsertClient string
	// Index names the index ReadRows goes along, one partition's or the
	// primary key ("" lets the engine choose); KeyIs is the comparison of
	// m.msg_key with a key, false rather than NULL where m.msg_key is NULL
	// (the filter is a column of the read), and the key as its argument.
	Index func(partition bool) string
	KeyIs func(key string) (string, any)
	// InsertSample inserts a stream_sample row (sqldb.SampleColumns)
	// unless its bucket has one, which then changes no row.
	InsertSample string
	// LastID reads the id the INSERT of a stream's configuration assigned,
	// run after it in its transaction (SELECT LAST_INSERT_ID()); "" where
	// the INSERT returns it (RETURNING id).
	LastID string
}

// Scope runs fn on what a driver gives it: a transaction of its own, a
// snapshot, or a connection for single statements; it may run fn again
// (after a deadlock), and classifies fn's error. Over adapts the scopes of
// the database/sql drivers.
type Scope func(ctx context.Context, fn func(Runner) error) error

// In runs op with p in run and returns op's value from the last run.
func In[P, V any](ctx context.Context, run Scope, op func(context.Context, Runner, P) (V, error), p P) (V, error) {
	return Within(ctx, run, func(q Runner) (V, error) { return op(ctx, q, p) })
}

// Within runs fn in run and returns fn's value from the last run (a scope
// may run fn again after a deadlock).
func Within[V any](ctx context.Context, run Scope, fn func(Runner) (V, error)) (V, error) {
	var v V
	err := run(ctx, func(q Runner) (err error) {
		v, err = fn(q)
		return err
	})
	return v, err
}

// LogTable names a stream's log table.
func LogTable(streamID int64) string { return "message_log_" + strconv.FormatInt(streamID, 10) }

func (s Store[T]) scanStream(r driver.RowScanner) (driver.StreamConfig, error) {
	return ScanStream(r, s.At)
}

func (s Store[T]) scanGroup(r driver.RowScanner) (driver.GroupConfig, error) {
	g, _, err := ScanGroup(r, s.At)
	return g, err
}

// CreateStream inserts the configuration of a new stream and returns it
// with its id and its creation time as stored; duplicate classifies a
// unique violation (another stream's name). The engine makes the log table.
func (s Store[T]) CreateStream(ctx context.Context, tx Runner, cfg driver.StreamConfig, duplicate func(error) bool) (driver.StreamConfig, error) {
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	insert := `INSERT INTO stream_config (name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	args := []any{cfg.Name, cfg.Partitions, cfg.Compacted, cfg.Retention.MaxAge.Microseconds(), cfg.Retention.MaxRows, cfg.Retention.Hard, s.Time(cfg.CreatedAt)}
	var id int64
	var err error
	if s.LastID == "" {
		_, err = scanRow(ctx, tx, insert+` RETURNING id`, args, &id)
	} else if _, err = tx.Exec(ctx, insert, args...); err == nil {
		_, err = scanRow(ctx, tx, s.LastID, nil, &id)
	}
	cfg.ID, err = NewStreamID(id, err, duplicate(err))
	return cfg, err
}

// Stream reads the configuration of the stream where names (with args; a
// locking clause may follow the condition), or fails with
// ErrStreamNotFound.
func (s Store[T]) Stream(ctx context.Context, q Runner, where string, args ...any) (driver.StreamConfig, error) {
	c, found, err := firstOn(ctx, q, `SELECT `+StreamColumns+` FROM stream_config WHERE `+where, args, s.scanStream)
	if err == nil && !found {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

// ListStreams implements driver.Driver.ListStreams on q.
func (s Store[T]) ListStreams(ctx context.Context, q Runner, _ driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	return collectOn(ctx, q, `SELECT `+StreamColumns+` FROM stream_config ORDER BY name`, nil, s.scanStream)
}

// RenameStream implements driver.Driver.RenameStream on q; duplicate
// classifies a unique violation.
func RenameStream(ctx context.Context, q Runner, p driver.RenameStreamParams, duplicate func(error) bool) error {
	n, err := q.Exec(ctx, `UPDATE stream_config SET name = ? WHERE id = ?`, p.NewName, p.StreamID)
	return Renamed(n, err, duplicate(err))
}

// StreamTables are the tables other than stream_config that keep rows of
// a stream on both engines; each engine has its own besides (its
// partitions' rows).
var StreamTables = []string{"consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
	"schema_revision", "schema_reader", "registry_setting", "row_count", "row_count_mark"}

// DeleteStream deletes a stream's configuration in tx, or fails with
// ErrStreamNotFound; then locked, the engine's step that locks what the
// stream's writers hold (nil for none); then the stream's rows in tables
// and in StreamTables. The engine drops the log table.
func DeleteStream(ctx context.Context, tx Runner, streamID int64, locked func() error, tables ...string) error {
	n, err := tx.Exec(ctx, `DELETE FROM stream_config WHERE id = ?`, streamID)
	if err := Changed(n, err, driver.ErrStreamNotFound); err != nil {
		return err
	}
	if locked != nil {
		if err := locked(); err != nil {
			return err
		}
	}
	return ExecEach(ctx, tx, append(tables, StreamTables...), func(table string) string { return `DELETE FROM ` + table + ` WHERE stream_id = ?` }, streamID)
}

// StoreAltered writes next over stored in tx, under the engine's locks
// (driver.Alter's write step): the configuration, then partitions (the
// engine's rows of its partitions; nil for none), a cursor of every group
// at the start of each new partition (nothing written there is passed
// over), and the compaction heads when compaction is switched.
func StoreAltered(ctx context.Context, tx Runner, stored, next driver.StreamConfig, partitions func() error) error {
	if _, err := tx.Exec(ctx, `UPDATE stream_config SET partitions = ?, compacted = ?, retention_max_age_us = ?,
		retention_max_rows = ?, retention_hard = ?, generation = ? WHERE id = ?`, next.Partitions, next.Compacted,
		next.Retention.MaxAge.Microseconds(), next.Retention.MaxRows, next.Retention.Hard, next.Generation, next.ID); err != nil {
		return err
	}
	if partitions != nil {
		if err := partitions(); err != nil {
			return err
		}
	}
	// "? + 0" types each partition as a number where an engine reads an
	// untyped value in a UNION as text (PostgreSQL).
	for start := stored.Partitions; start < next.Partitions; start += cursorChunk {
		end := min(start+cursorChunk, next.Partitions)
		args := make([]any, 0, end-start+1)
		for part := start; part < end; part++ {
			args = append(args, part)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO group_cursor (stream_id, group_name, `partition`, position) SELECT g.stream_id, g.name, n.p, 0 FROM consumer_group g CROSS JOIN ("+
			Repeated(end-start, "SELECT ? + 0 AS p", " UNION ALL ")+") n WHERE g.stream_id = ?", append(args, next.ID)...); err != nil {
			return err
		}
	}
	if next.Compacted == stored.Compacted {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM compaction_head WHERE stream_id = ?`, next.ID); err != nil || !next.Compacted {
		return err
	}
	// Each key's head is its row with the greatest (schema_version,
	// compaction_rank, id) (C11).
	_, err := tx.Exec(ctx, `INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
		SELECT ?, msg_key, id, schema_version, compaction_rank FROM (
			SELECT msg_key, id, schema_version, compaction_rank, ROW_NUMBER() OVER (PARTITION BY msg_key
				ORDER BY schema_version DESC, compaction_rank DESC, id DESC) AS n
			FROM `+LogTable(next.ID)+` WHERE msg_key IS NOT NULL) h WHERE n = 1`, next.ID)
	return err
}

// LoadGroup reads a group's stored configuration, the locking clause lock
// following the read, or fails with ErrGroupNotFound.
func (s Store[T]) LoadGroup(ctx context.Context, q Runner, streamID int64, name, lock string) (driver.GroupConfig, error) {
	g, found, err := firstOn(ctx, q, `SELECT `+GroupColumns+` FROM consumer_group WHERE stream_id = ? AND name = ?`+lock, []any{streamID, name}, s.scanGroup)
	if err == nil && !found {
		return g, driver.GroupNotFound(name)
	}
	return g, err
}

// ListGroups implements driver.Driver.ListGroups on q.
func (s Store[T]) ListGroups(ctx context.Context, q Runner, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	return collectOn(ctx, q, `SELECT `+GroupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{p.StreamID}, s.scanGroup)
}

// DeleteGroup implements driver.Driver.DeleteGroup in tx: the group's
// row, then its rows in every table that keeps some.
func DeleteGroup(ctx context.Context, tx Runner, p driver.DeleteGroupParams) error {
	n, err := tx.Exec(ctx, `DELETE FROM consumer_group WHERE stream_id = ? AND name = ?`, p.StreamID, p.Group)
	if err := Changed(n, err, driver.ErrGroupNotFound); err != nil {
		return err
	}
	return ExecEach(ctx, tx, []string{"group_cursor", "delivery_exception", "delivery_batch", "schema_reader"},
		func(table string) string { return `DELETE FROM ` + table + ` WHERE stream_id = ? AND group_name = ?` }, p.StreamID, p.Group)
}

// GroupLocks are the locking clauses of a registration's reads, in the
// order they are taken ("" on SQLite, whose single writer orders a
// registration against claims).
type GroupLocks struct {
	// Stream follows the read of the stream's row (shared: other
	// registrations may run, AlterStream may not).
	Stream string
	// Group follows the read of the group's row and then of its cursors,
	// which claims in flight hold: a changed group is written after them.
	Group string
}

// RegisterGroup implements driver.Driver.RegisterGroup in tx: an existing
// group's row is read (locked) while p.Update decides, a new one is
// written with its cursors, at 0 or, for StartLatest, where latest (the
// engine's read of each partition's newest row) puts them.
func (s Store[T]) RegisterGroup(ctx context.Context, tx Runner, p driver.RegisterGroupParams, locks GroupLocks,
	latest func(driver.StreamConfig) ([]int64, error)) (driver.GroupConfig, error) {
	cfg := p.Group
	stream, err := s.Stream(ctx, tx, "id = ?"+locks.Stream, cfg.StreamID)
	if err != nil {
		return cfg, err
	}
	existing, err := s.LoadGroup(ctx, tx, cfg.StreamID, cfg.Name, locks.Group)
	switch {
	case err == nil:
		return updateGroup(ctx, tx, existing, p.Update, locks.Group)
	case !errors.Is(err, driver.ErrGroupNotFound):
		return cfg, err
	}
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	bindings, convertsFrom, err := EncodeGroupLists(cfg)
	if err != nil {
		return cfg, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cfg.StreamID, cfg.Name, cfg.SchemaVersion, cfg.AllVersions, bindings, convertsFrom, int(cfg.Start), s.Time(cfg.CreatedAt)); err != nil {
		return cfg, err
	}
	start := make([]int64, stream.Partitions)
	if cfg.Start == driver.StartLatest {
		if start, err = latest(stream); err != nil {
			return cfg, err
		}
	}
	if err := insertCursors(ctx, tx, cfg, start); err != nil {
		return cfg, err
	}
	cfg.Bindings, cfg.ConvertsFrom = NilIfEmpty(slices.Clone(cfg.Bindings)), NilIfEmpty(slices.Clone(cfg.ConvertsFrom))
	return cfg, nil
}

// registerAttempts bounds RegisterGroupIn's attempts: a registration that
// lost the insert to a concurrent one finds the winner's row on the next,
// unless the group was deleted meanwhile.
const registerAttempts = 4

// RegisterGroupIn runs RegisterGroup in run, the engine's transaction,
// again when a concurrent registration of the same group inserted its row
// first: the engine refuses the loser's insert as a duplicate (isUnique)
// once the winner commits, and the next attempt finds the row. latest gets
// the transaction RegisterGroup runs in.
func (s Store[T]) RegisterGroupIn(ctx context.Context, run Scope, p driver.RegisterGroupParams, locks GroupLocks,
	latest func(Runner, driver.StreamConfig) ([]int64, error), isUnique func(error) bool) (driver.GroupConfig, error) {
	for attempt := 1; ; attempt++ {
		lost := false
		cfg, err := Within(ctx, run, func(tx Runner) (driver.GroupConfig, error) {
			cfg, err := s.RegisterGroup(ctx, tx, p, locks, func(stream driver.StreamConfig) ([]int64, error) { return latest(tx, stream) })
			lost = err != nil && isUnique(err)
			return cfg, err
		})
		if !lost || attempt >= registerAttempts {
			return cfg, err
		}
	}
}

// PauseGroup implements driver.GroupPauser.PauseGroup in tx: the group's
// row is read (locked with lock), then every cursor of the group (waiting
// for claims in flight, which hold one), in RegisterGroup's order (C19),
// and the pause is written.
func (s Store[T]) PauseGroup(ctx context.Context, tx Runner, p driver.PauseGroupParams, lock string) error {
	if _, err := s.LoadGroup(ctx, tx, p.StreamID, p.Group, lock); err != nil {
		return err
	}
	if _, err := cursorsOf(ctx, tx, p.StreamID, p.Group, lock); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE consumer_group SET paused_at = ? WHERE stream_id = ? AND name = ?`, driver.TimeOrNull(p.PausedAt, s.Time), p.StreamID, p.Group)
	return err
}

// cursorChunk is how many cursors one statement writes.
const cursorChunk = 256

// insertCursors writes a new group's cursors, the one of partition p at
// start[p].
func insertCursors(ctx context.Context, tx Runner, g driver.GroupConfig, start []int64) error {
	for from := 0; from < len(start); from += cursorChunk {
		to := min(from+cursorChunk, len(start))
		args := make([]any, 0, 4*(to-from))
		for p := from; p < to; p++ {
			args = append(args, g.StreamID, g.Name, p, start[p])
		}
		if _, err := tx.Exec(ctx, "INSERT INTO group_cursor (stream_id, group_name, `partition`, position) VALUES "+Repeated(to-from, "(?, ?, ?, ?)", ", "), args...); err != nil {
			return err
		}
	}
	return nil
}

// updateGroup stores what update makes of an existing group's bindings and
// converter versions; a change first reads the group's cursors with lock,
// so that claims in flight end before it and claims after it read it (C19).
func updateGroup(ctx context.Context, tx Runner, existing driver.GroupConfig,
	update func(driver.GroupConfig) (driver.GroupConfig, error), lock string) (driver.GroupConfig, error) {
	if update == nil {
		return existing, nil
	}
	// Update gets its own copy of the lists, so that it cannot change the
	// stored ones it is compared with.
	copied := existing
	copied.Bindings, copied.ConvertsFrom = slices.Clone(existing.Bindings), slices.Clone(existing.ConvertsFrom)
	next, err := update(copied)
	if err != nil {
		return existing, driver.CallerError{Err: err}
	}
	out := existing
	out.Bindings, out.ConvertsFrom = NilIfEmpty(slices.Clone(next.Bindings)), NilIfEmpty(slices.Clone(next.ConvertsFrom))
	if slices.Equal(out.Bindings, existing.Bindings) && slices.Equal(out.ConvertsFrom, existing.ConvertsFrom) {
		return existing, nil
	}
	if _, err := cursorsOf(ctx, tx, out.StreamID, out.Name, lock); err != nil {
		return existing, err
	}
	b, c, err := EncodeGroupLists(out)
	if err != nil {
		return out, err
	}
	_, err = tx.Exec(ctx, `UPDATE consumer_group SET bindings = ?, converts_from = ? WHERE stream_id = ? AND name = ?`, b, c, out.StreamID, out.Name)
	return out, err
}

// cursorsOf reads the partitions a group has cursors in, in partition
// order (the order every locking read of cursors takes), with the locking
// clause lock.
func cursorsOf(ctx context.Context, q Runner, streamID int64, group, lock string) (map[int]bool, error) {
	have := map[int]bool{}
	err := markOn(ctx, q, "SELECT `partition` FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition`"+lock, []any{streamID, group}, have)
	return have, err
}

// LoadGroups reads a stream's groups with their cursors, the locking
// clause lock following the read of the groups and then of the cursors,
// in the order a registration takes them.
func (s Store[T]) LoadGroups(ctx context.Context, q Runner, stream driver.StreamConfig, lock string) ([]driver.GroupStats, error) {
	var groups []driver.GroupStats
	index := map[string]int{}
	if err := eachRowOn(ctx, q, `SELECT `+GroupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`+lock, []any{stream.ID}, never, func(r Rows) error {
		g, removed, err := ScanGroup(r, s.At)
		index[g.Name] = len(groups)
		groups = append(groups, driver.GroupStats{GroupConfig: g, RemovedUnread: removed, Cursors: make([]int64, stream.Partitions)})
		return err
	}); err != nil {
		return nil, err
	}
	err := eachRowOn(ctx, q, "SELECT group_name, `partition`, position FROM group_cursor WHERE stream_id = ? ORDER BY group_name, `partition`"+lock, []any{stream.ID}, never, func(r Rows) error {
		var name string
		var p int
		var pos int64
		if err := r.Scan(&name, &p, &pos); err != nil {
			return err
		}
		if i, ok := index[name]; ok && p >= 0 && p < stream.Partitions {
			groups[i].Cursors[p] = pos
		}
		return nil
	})
	return groups, err
}
