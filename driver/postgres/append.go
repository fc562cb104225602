package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Append implements driver.Driver. Without a caller's transaction, the
// partition locks, the insert, the head moves and the notification go to the
// server as one pipelined batch that runs as one implicit transaction: one
// round trip.
func (d *Driver) Append(ctx context.Context, p driver.AppendParams) ([]int64, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if len(p.Rows) == 0 {
		return nil, nil
	}
	stream, tx := p.Stream, p.Tx
	var caller pgx.Tx
	if tx != nil {
		var err error
		if caller, err = callerTx(tx); err != nil {
			return nil, err
		}
	}
	// A caller's transaction carries no NOTIFY, which would queue its commit
	// behind every notifying commit: txWakes notifies after it (xid).
	ch := d.channel(stream.ID)
	wantXid := caller != nil && ch != ""
	notify := caller == nil && d.notifyNow(stream.ID)
	batch, locks, err := d.appendBatch(stream, p.Rows, notify, wantXid, caller == nil)
	if err != nil {
		return nil, err
	}
	if caller != nil {
		ids, xid, err := runAppend(ctx, caller, batch, len(p.Rows), d.lockTimeoutValue() != "", false, wantXid)
		if errors.Is(err, errNothingAppended) {
			return nil, staleOrGone(ctx, caller, stream)
		}
		if err != nil {
			return nil, d.appendError(ctx, stream, err, locks, true)
		}
		if wantXid {
			d.wakeAfterCommit(ch, xid)
		}
		return ids, nil
	}
	var ids []int64
	refused := false
	err = d.write(ctx, func(c *pgxpool.Conn) error {
		var err error
		ids, _, err = runAppend(ctx, c, fresh(batch), len(p.Rows), d.lockTimeoutValue() != "", true, false)
		if errors.Is(err, errNothingAppended) {
			refused, err = true, nil
		}
		return err
	})
	if err == nil && refused {
		err = d.read(ctx, func() error { return staleOrGone(ctx, d.pool, stream) })
	}
	if err != nil {
		return nil, d.appendError(ctx, stream, err, locks, false)
	}
	if !notify {
		d.notifyAfterCommit(stream.ID)
	}
	return ids, nil
}

// appendError classifies a failed append, naming the partitions of a lock
// it could not get.
func (d *Driver) appendError(ctx context.Context, stream driver.StreamConfig, err error, locks []int32, callerTx bool) error {
	if callerTx {
		err = d.wrap(ctx, err, stageWrite)
	}
	var de *driver.Error
	if errors.As(err, &de) && de.Kind == driver.ErrConflict && de.Advice == "" {
		de.Advice = conflictAdvice(err, locks, callerTx)
	}
	return fmt.Errorf("append to stream %d: %w", stream.ID, err)
}

// fresh returns a copy of b's statements for one attempt to send them.
// Sending a batch binds its statements to what pgx prepared for them on that
// connection (or began to prepare, when the session ended first), so the
// same batch sent again on another connection after a failure refers to
// prepared statements that do not exist there, or to descriptions never
// filled in: every attempt of a retried write sends a copy of its own.
func fresh(b *pgx.Batch) *pgx.Batch {
	out := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries))}
	for _, q := range b.QueuedQueries {
		out.Queue(q.SQL, q.Arguments...).Fn = q.Fn
	}
	return out
}

// runAppend sends the batch built by appendBatch and returns the ids, and
// the transaction id when the batch asks for it (xid). bounded says the
// batch sets the driver's lock timeout first; own says the batch runs as an
// implicit transaction of its own, which commits as the batch ends (and
// then nothing restores the setting: it ends with the transaction).
func runAppend(ctx context.Context, s querier, batch *pgx.Batch, n int, bounded, own, xid bool) ([]int64, string, error) {
	br := s.SendBatch(ctx, batch)
	fail := func(err error) ([]int64, string, error) {
		_ = br.Close()
		return nil, "", err
	}
	if bounded {
		if _, err := br.Exec(); err != nil { // lock_timeout
			return fail(err)
		}
	}
	rs, err := br.Query() // partition locks and insert
	if err != nil {
		return fail(err)
	}
	ids, err := collectIDs(rs, n)
	if err != nil {
		return fail(err)
	}
	if len(ids) == 0 {
		// The insert is guarded by the count of partitions it locked at the
		// generation planned: staleOrGone says which failed.
		return fail(errNothingAppended)
	}
	if bounded && !own {
		if _, err := br.Exec(); err != nil { // lock_timeout restored
			return fail(err)
		}
	}
	var x string
	if xid {
		if err := br.QueryRow().Scan(&x); err != nil {
			return fail(err)
		}
	}
	if err := br.Close(); err != nil {
		if own {
			return nil, "", &staged{err: err, stage: stageCommit}
		}
		return nil, "", err
	}
	if len(ids) != n {
		return nil, "", fmt.Errorf("%d ids for %d rows", len(ids), n)
	}
	return ids, x, nil
}

// lockTimeoutValue is the lock_timeout setting for a partition lock, "" for
// none.
func (d *Driver) lockTimeoutValue() string {
	if d.lockTimeout <= 0 {
		return ""
	}
	return strconv.FormatInt(max(d.lockTimeout.Milliseconds(), 1), 10) + "ms"
}

// queueBounded queues a locking statement of compaction and retention
// between two that set the driver's lock_timeout and restore the
// transaction's, so a caller's transaction keeps its own setting
// (set_config(..., true) lasts until the transaction ends). Each statement
// returns one result.
func (d *Driver) queueBounded(b *pgx.Batch, query string, args ...any) {
	lt := d.lockTimeoutValue()
	if lt == "" {
		b.Queue(`SELECT 1`)
	} else {
		b.Queue(saveAndSetLockTimeout, lt)
	}
	b.Queue(query, args...)
	if lt == "" {
		b.Queue(`SELECT 1`)
	} else {
		b.Queue(restoreLockTimeout)
	}
}

// saveAndSetLockTimeout saves the transaction's lock_timeout and sets $1;
// restoreLockTimeout puts the saved one back. setLockTimeout sets $1 where
// nothing needs restoring (the driver's own implicit transaction).
const (
	saveAndSetLockTimeout = `SELECT set_config('sqlstreams.saved_lock_timeout', current_setting('lock_timeout'), true), set_config('lock_timeout', $1::text, true)`
	restoreLockTimeout    = `SELECT set_config('lock_timeout', current_setting('sqlstreams.saved_lock_timeout'), true)`
	setLockTimeout        = `SELECT set_config('lock_timeout', $1::text, true)`
)

// appendBatch builds an append's statements: the lock timeout (restored
// after, unless own: the driver's implicit transaction ends the setting),
// appendStatement, and the NOTIFY or the transaction id (xid). It returns
// the partitions it locks.
func (d *Driver) appendBatch(stream driver.StreamConfig, rows []driver.AppendRow, notify, xid, own bool) (*pgx.Batch, []int32, error) {
	locks, err := driver.AppendPartitions[int32](stream, rows)
	if err != nil {
		return nil, nil, err
	}
	values, err := appendValuesOf(stream, rows)
	if err != nil {
		return nil, nil, err
	}
	b := &pgx.Batch{}
	lt := d.lockTimeoutValue()
	switch {
	case lt != "" && own:
		b.Queue(setLockTimeout, lt)
	case lt != "":
		b.Queue(saveAndSetLockTimeout, lt)
	}
	b.Queue(appendStatement(stream, values.sel), append(values.args, stream.ID, locks, int64(len(locks)), stream.Generation)...)
	if lt != "" && !own {
		b.Queue(restoreLockTimeout)
	}
	if ch := d.channel(stream.ID); ch != "" && notify {
		b.Queue(`SELECT pg_notify($1::text, '')`, ch)
	}
	if xid {
		b.Queue(`SELECT pg_current_xact_id()::text`)
	}
	return b, locks, nil
}

// appendValues are an append's rows as its insert's parameters $1 to $9,
// with the SELECT that reads them.
type appendValues struct {
	sel  string // sharedInsert or rowsInsert
	args []any
}

// appendValuesOf binds an append's rows. When every row has the same schema
// version and revision, routing key, rank, headers and production time (one
// ProduceBatch of one producer usually does), those six are sent once as
// scalars and only partition, key and payload as arrays (sharedInsert);
// otherwise each column is an array (rowsInsert).
func appendValuesOf(stream driver.StreamConfig, rows []driver.AppendRow) (appendValues, error) {
	n := len(rows)
	partitions := make([]int32, n)
	keys := make([]*string, n)
	payloads := make([][]byte, n)
	headers := make([]string, n)
	shared := driver.SharesValues(rows)
	for i, r := range rows {
		partitions[i] = int32(r.Partition)
		if r.HasKey {
			keys[i] = &rows[i].Key
		}
		payloads[i] = r.Payload
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		if len(r.Headers) > 0 && (i == 0 || !shared) { // shared: the first row's stand for all
			h, err := json.Marshal(r.Headers)
			if err != nil {
				return appendValues{}, &driver.Error{Kind: driver.ErrDatabase, Err: err}
			}
			headers[i] = string(h)
		}
	}
	if stream.Compacted && slices.Contains(keys, nil) {
		return appendValues{}, &driver.Error{Kind: driver.ErrDatabase, Err: errors.New("a compacted stream needs a key on every row")}
	}
	if shared {
		var h *string // NULL: no headers
		if headers[0] != "" {
			h = &headers[0]
		}
		first := rows[0]
		return appendValues{sel: sharedInsert, args: []any{partitions, texts(keys), byteas(payloads), int32(first.SchemaVersion),
			int32(first.SchemaRevision), first.RoutingKey, first.CompactionRank, h, ts(first.ProducedAt)}}, nil
	}
	versions, revisions := make([]int32, n), make([]int32, n)
	routing, ranks, produced := make([]string, n), make([]int64, n), make([]time.Time, n)
	for i, r := range rows {
		versions[i], revisions[i] = int32(r.SchemaVersion), int32(r.SchemaRevision)
		routing[i], ranks[i], produced[i] = r.RoutingKey, r.CompactionRank, ts(r.ProducedAt)
	}
	return appendValues{sel: rowsInsert,
		args: []any{partitions, versions, revisions, texts(keys), routing, ranks, byteas(payloads), headers, produced}}, nil
}

// appendStatement is an append's insert of the rows sel reads, ids taken
// in input order, under the locks of the partitions $11 of the stream $10,
// which its guard counts ($12) at the planned generation ($13): the guard
// runs once, before the first id is taken, so every id is taken under the
// locks (C5; docs/internals.md, "Invariants per engine").
func appendStatement(stream driver.StreamConfig, sel string) string {
	locked := `WITH l AS (SELECT partition, generation FROM stream_partition WHERE stream_id = $10::bigint AND partition = ANY($11::integer[])
		ORDER BY partition FOR NO KEY UPDATE)`
	insert := `INSERT INTO ` + logTable(stream.ID) + ` (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at)
		` + sel + `
		WHERE (SELECT count(*) FROM l WHERE l.generation = $13::bigint) = $12::bigint
		ORDER BY u.ord`
	if !stream.Compacted {
		return locked + ` ` + insert + ` RETURNING id`
	}
	// The best row of each key in the batch replaces the head when it beats
	// it by (schema_version, compaction_rank, id) (C11). Keys map to
	// partitions, so the partition locks serialize head moves of a key.
	return locked + `, ins AS (` + insert + ` RETURNING id, msg_key, schema_version, compaction_rank),
		best AS (SELECT DISTINCT ON (msg_key) msg_key, id, schema_version, compaction_rank FROM ins
			ORDER BY msg_key, schema_version DESC, compaction_rank DESC, id DESC),
		heads AS (INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
			SELECT ` + strconv.FormatInt(stream.ID, 10) + `, msg_key, id, schema_version, compaction_rank FROM best
			ON CONFLICT (stream_id, msg_key) DO UPDATE SET head_id = excluded.head_id,
				schema_version = excluded.schema_version, compaction_rank = excluded.compaction_rank
			WHERE (excluded.schema_version, excluded.compaction_rank, excluded.head_id) >
				(compaction_head.schema_version, compaction_head.compaction_rank, compaction_head.head_id))
		SELECT id FROM ins ORDER BY id`
}

// rowsInsert and sharedInsert are the SELECT of an append's insert, which
// appendStatement completes with its guard and order: rowsInsert takes every
// column from an array of one element per row; sharedInsert takes
// partition ($1), key ($2) and payload ($3) from arrays and the values all
// rows share from scalars ($4 to $9). Both keep the input order (u.ord).
const (
	rowsInsert = `SELECT u.p, u.v, u.sr, u.k, u.rk, u.r, u.pl, NULLIF(u.h, '')::jsonb, u.at
		FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::bigint[], $7::bytea[], $8::text[], $9::timestamptz[])
			WITH ORDINALITY AS u(p, v, sr, k, rk, r, pl, h, at, ord)`
	sharedInsert = `SELECT u.p, $4::integer, $5::integer, u.k, $6::text, $7::bigint, u.pl, $8::jsonb, $9::timestamptz
		FROM unnest($1::integer[], $2::text[], $3::bytea[]) WITH ORDINALITY AS u(p, k, pl, ord)`
)
