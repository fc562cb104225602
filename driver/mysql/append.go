package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Chunking of multi-row INSERTs: at most appendChunkRows rows and about
// appendChunkBytes of payload per statement, well under the 16 MiB default
// max_allowed_packet of MariaDB (MySQL's is 64 MiB).
const (
	appendChunkRows  = 100
	appendChunkBytes = 4 << 20
)

// Append implements driver.Driver. See the package documentation for how
// it keeps ids in commit order per partition (C5).
func (d *Driver) Append(ctx context.Context, p driver.AppendParams) ([]int64, error) {
	stream, rows := p.Stream, p.Rows
	if len(rows) == 0 {
		return []int64{}, d.check()
	}
	parts, err := driver.AppendPartitions[int](stream, rows)
	if err != nil {
		return nil, err
	}
	headers := make([]any, len(rows))
	for i, r := range rows {
		if len(r.Headers) > 0 {
			h, err := json.Marshal(r.Headers)
			if err != nil {
				return nil, &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("append to stream %d: headers: %w", stream.ID, err)}
			}
			headers[i] = string(h)
		}
	}
	if d.appendsInOneStatement(p, rows) {
		ids, err := d.appendOne(ctx, stream, rows, headers, parts)
		if !errors.Is(err, errAppendInTx) {
			return ids, err
		}
	}
	partArgs := sqldb.Args(parts)
	table := logTable(stream.ID)
	ids := make([]int64, 0, len(rows))

	fn := func(t querier) error {
		ids = ids[:0]
		// Lock the partitions in ascending order and hold them to commit:
		// this is what keeps ids in commit order per partition (C5).
		gens, err := d.lockPartitions(ctx, t, stream.ID, parts, false, p.Tx != nil)
		if err != nil {
			return err
		}
		if len(gens) != len(parts) || slices.ContainsFunc(gens, func(g int64) bool { return g != stream.Generation }) {
			return staleOrGone(ctx, t, stream)
		}
		step := d.autoincStep.Load()
		for start := 0; start < len(rows); {
			end := start + chunkLen(rows[start:])
			chunk := rows[start:end]
			query, args := insertRows(table, chunk, headers[start:end], "", nil)
			res, err := t.ExecContext(ctx, query, args...)
			if err != nil {
				return &logInsertError{stream: stream.ID, err: err}
			}
			first, err := sqldb.Inserted(res, stream.ID, len(chunk))
			if err != nil {
				return err
			}
			if step > 0 {
				ids = steppedIDs(ids, first, len(chunk), step)
			} else if err := readBackIDs(ctx, t, table, partArgs, first, len(chunk), &ids); err != nil {
				return fmt.Errorf("append to stream %d: %w", stream.ID, err)
			}
			start = end
		}
		if err := d.orderAppendCluster(ctx, t, stream.ID, rows, ids); err != nil {
			return err
		}
		if !stream.Compacted {
			return nil
		}
		return moveHeads(ctx, t, stream.ID, rows, ids)
	}
	if err := d.withLog(ctx, stream.ID, func() error { return d.inTx(ctx, p.Tx, fn) }); err != nil {
		return nil, err
	}
	return ids, nil
}

// chunkLen is how many rows from the start of rows the next INSERT takes:
// at most appendChunkRows, and about appendChunkBytes of payload (at least
// one row).
func chunkLen(rows []driver.AppendRow) int {
	n, size := 0, 0
	for n < len(rows) && n < appendChunkRows && (n == 0 || size+len(rows[n].Payload) <= appendChunkBytes) {
		size += len(rows[n].Payload)
		n++
	}
	return n
}

// insertRows builds the multi-row INSERT of rows into table; headers[i] is
// the JSON of rows[i].Headers or nil. A non-empty first replaces the
// partition placeholder of the first row, with firstArgs as its arguments.
func insertRows(table string, rows []driver.AppendRow, headers []any, first string, firstArgs []any) (string, []any) {
	var sb strings.Builder
	sb.Grow(160 + len(first) + 40*len(rows))
	sb.WriteString("INSERT INTO " + table + " (`partition`, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES ")
	args := make([]any, 0, len(rows)*9+len(firstArgs))
	for i, r := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		var key any
		if r.HasKey {
			key = r.Key
		}
		if i == 0 && first != "" {
			sb.WriteString("(" + first + ", ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, firstArgs...)
		} else {
			sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, r.Partition)
		}
		args = append(args, r.SchemaVersion, r.SchemaRevision, key, r.RoutingKey, r.CompactionRank, string(r.Payload), headers[i], ts(r.ProducedAt))
	}
	return sb.String(), args
}

// errAppendInTx sends an append from appendOne to the transaction.
var errAppendInTx = errors.New("append in a transaction")

// errSubqueryRows is ER_SUBQUERY_NO_1_ROW, which appendOne's statement
// raises on purpose when a partition's lock row is missing.
const errSubqueryRows = 1242

// appendsInOneStatement reports whether Append writes rows with appendOne:
// not in the caller's transaction (ProduceTx), on MariaDB (FOR UPDATE WAIT)
// but not Galera (orderAppendCluster writes the lock rows), with one
// INSERT's ids consecutive (no read-back), to a stream without compaction
// (moveHeads runs in the same transaction) and rows that fit in one INSERT.
func (d *Driver) appendsInOneStatement(p driver.AppendParams, rows []driver.AppendRow) bool {
	return p.Tx == nil && !p.Stream.Compacted && !d.forceAppendTx && d.mariadb.Load() && !d.gal.on.Load() && d.autoincStep.Load() > 0 &&
		chunkLen(rows) == len(rows)
}

// appendOne appends rows with one INSERT in autocommit, one round trip,
// that takes the partitions' append locks itself. The first row's
// partition is a scalar subquery that locks the lock rows of all the
// partitions written (partitionRows: one primary-key lookup each, in
// ascending order, as lockPartitions takes them) with FOR UPDATE WAIT n,
// and gives the partition only if it found all of them at the generation
// the append was planned with; if not (the stream was destroyed or
// altered: staleOrGone says which), it falls to a subquery of two rows, an
// error in every sql_mode, and nothing is written. The server evaluates that value before it inserts the first row,
// and a simple INSERT takes its AUTO_INCREMENT values when it inserts the
// first row, so the ids are taken under the locks, which are held until the
// statement commits: the same order as the transaction (C5), without
// START TRANSACTION, the locking read and COMMIT as round trips of their
// own. A missing log table goes to the transaction, which re-creates it
// or finds the stream gone.
func (d *Driver) appendOne(ctx context.Context, stream driver.StreamConfig, rows []driver.AppendRow, headers []any, parts []int) ([]int64, error) {
	locks, locksArgs := partitionRows(stream.ID, parts, "1", " FOR UPDATE"+d.waitClause(), &stream.Generation)
	lock := "COALESCE((SELECT ? FROM (" + locks + ") AS l HAVING COUNT(*) = ?), (SELECT 1 UNION ALL SELECT 2))"
	lockArgs := make([]any, 0, len(locksArgs)+2)
	lockArgs = append(append(append(lockArgs, rows[0].Partition), locksArgs...), len(parts))
	query, args := insertRows(logTable(stream.ID), rows, headers, lock, lockArgs)
	step := d.autoincStep.Load()
	var ids []int64
	var noTable bool
	err := d.autocommit(ctx, func(q querier) error {
		res, err := q.ExecContext(ctx, query, args...)
		switch n := mysqlErrno(err); {
		case n == errNoSuchTable:
			noTable = true
			return finalError{err}
		case n == errSubqueryRows:
			return finalError{staleOrGone(ctx, q, stream)}
		case lockWaitEnded(err):
			return finalError{d.lockWaitError(stream.ID, parts, false, err)}
		case err != nil:
			return &logInsertError{stream: stream.ID, err: err}
		}
		// The statement has committed: nothing below may run it again.
		first, err := sqldb.Inserted(res, stream.ID, len(rows))
		if err != nil {
			return finalError{err}
		}
		ids = steppedIDs(nil, first, len(rows), step)
		return nil
	})
	if noTable {
		return nil, errAppendInTx
	}
	return ids, err
}

// waitClause bounds a locking read's wait: FOR UPDATE WAIT n on MariaDB,
// in whole seconds; MySQL 8 has no such clause and waits the session's
// innodb_lock_wait_timeout.
func (d *Driver) waitClause() string {
	if !d.mariadb.Load() {
		return ""
	}
	secs := int64((d.lockTimeout + time.Second - 1) / time.Second)
	return " WAIT " + strconv.FormatInt(max(secs, 1), 10)
}

// lockPartitions locks the append lock rows of a stream's partitions (all
// when parts is nil) in ascending order, exclusively or shared, and returns
// the configuration generation each row it locked carries. A wait that times out fails with ErrConflict naming
// the partitions, and is not run again: another transaction holds the lock,
// and will for a while.
func (d *Driver) lockPartitions(ctx context.Context, q querier, streamID int64, parts []int, share, callerTx bool) ([]int64, error) {
	lock := " FOR UPDATE" + d.waitClause()
	if share {
		lock = " LOCK IN SHARE MODE" + d.waitClause()
	}
	var query string
	var args []any
	if parts == nil {
		query, args = "SELECT generation FROM stream_partition WHERE stream_id = ? ORDER BY `partition`"+lock, []any{streamID}
	} else {
		query, args = partitionRows(streamID, parts, "generation", lock, nil)
	}
	var gens []int64
	err := sqldb.EachRow(ctx, q, query, args, func(r *sql.Rows) error {
		var g int64
		err := r.Scan(&g)
		gens = append(gens, g)
		return err
	})
	if lockWaitEnded(err) {
		return nil, finalError{d.lockWaitError(streamID, parts, callerTx, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %d: lock partitions: %w", streamID, err)
	}
	return gens, nil
}

// partitionRows selects what of the lock rows of parts (ascending), each
// locked with lock, one primary-key lookup per partition in that order;
// with atGeneration, only rows that carry that configuration generation
// (the lock is still taken, and waited for, on the others). One
// scan with partition IN (...) would go through the stream's every lock row
// (InnoDB reads a small table by stream_id alone) and lock each row it
// passes, so that an append would wait for partitions it does not write.
func partitionRows(streamID int64, parts []int, what, lock string, atGeneration *int64) (string, []any) {
	cond := ""
	args := make([]any, 0, 3*len(parts))
	for _, p := range parts {
		args = append(args, streamID, p)
		if atGeneration != nil {
			cond = " AND generation = ?"
			args = append(args, *atGeneration)
		}
	}
	return sqldb.Repeated(len(parts), "(SELECT "+what+" FROM stream_partition WHERE stream_id = ? AND `partition` = ?"+cond+lock+")", " UNION ALL "), args
}

// lockWaitError is the error of a wait for the append lock of parts (all
// partitions when nil) that timed out.
func (d *Driver) lockWaitError(streamID int64, parts []int, callerTx bool, err error) error {
	return &driver.Error{Kind: driver.ErrConflict, Advice: driver.AppendLockAdvice(parts, callerTx), Err: driver.Redact(fmt.Errorf("stream %d: lock partitions: %w", streamID, err), d.secrets...)}
}

// steppedIDs appends to ids the n ids one simple INSERT took from first on:
// consecutive values, step apart (lock mode 0 or 1).
func steppedIDs(ids []int64, first int64, n int, step int64) []int64 {
	for i := range n {
		ids = append(ids, first+int64(i)*step)
	}
	return ids
}

// readBackIDs appends the ids of the n rows just inserted from first on.
// The caller holds every partition it wrote, so any row of those partitions
// with an id of first or more is its own, and one INSERT assigns increasing
// ids in VALUES order.
func readBackIDs(ctx context.Context, t querier, table string, partArgs []any, first int64, n int, ids *[]int64) error {
	got := 0
	err := sqldb.EachRow(ctx, t, "SELECT id FROM "+table+" WHERE `partition` IN ("+sqldb.Placeholders(len(partArgs))+") AND id >= ? ORDER BY id LIMIT ?",
		append(append(append([]any{}, partArgs...), first), n), func(r *sql.Rows) error {
			var id int64
			got++
			err := r.Scan(&id)
			*ids = append(*ids, id)
			return err
		})
	if err == nil && got != n {
		err = fmt.Errorf("read back %d new ids, want %d", got, n)
	}
	return err
}

type head struct {
	version int
	rank    int64
	id      int64
}

func (h head) compare(o head) int {
	return cmp.Or(cmp.Compare(h.version, o.version), cmp.Compare(h.rank, o.rank), cmp.Compare(h.id, o.id))
}

// moveHeads makes each new row its key's head when it wins by
// (schema_version, compaction_rank, id) (C11). A key always maps to one
// partition and the caller holds that partition, so no other appender moves
// the same key meanwhile; the existing heads are still read FOR UPDATE.
func moveHeads(ctx context.Context, t querier, streamID int64, rows []driver.AppendRow, ids []int64) error {
	win := map[string]head{}
	for i, r := range rows {
		h := head{version: r.SchemaVersion, rank: r.CompactionRank, id: ids[i]}
		if cur, ok := win[r.Key]; !ok || h.compare(cur) > 0 {
			win[r.Key] = h
		}
	}
	keys := make([]string, 0, len(win))
	for k := range win {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for start := 0; start < len(keys); start += idChunk {
		chunk := keys[start:min(start+idChunk, len(keys))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, streamID)
		for _, k := range chunk {
			args = append(args, k)
		}
		if err := sqldb.EachRow(ctx, t, `SELECT msg_key, schema_version, compaction_rank, head_id FROM compaction_head
			WHERE stream_id = ? AND msg_key IN (`+sqldb.Placeholders(len(chunk))+`) FOR UPDATE`, args, func(r *sql.Rows) error {
			var k []byte
			var cur head
			if err := r.Scan(&k, &cur.version, &cur.rank, &cur.id); err != nil {
				return err
			}
			if h, ok := win[string(k)]; ok && h.compare(cur) <= 0 {
				delete(win, string(k))
			}
			return nil
		}); err != nil {
			return err
		}
		vals := make([]any, 0, 5*len(chunk))
		for _, k := range chunk {
			if h, ok := win[k]; ok {
				vals = append(vals, streamID, k, h.id, h.version, h.rank)
			}
		}
		if len(vals) == 0 {
			continue
		}
		// VALUES() is the spelling both engines accept (MySQL 8.0.20+
		// prefers a row alias, which MariaDB lacks).
		if _, err := t.ExecContext(ctx, `INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank) VALUES `+sqldb.Repeated(len(vals)/5, "(?, ?, ?, ?, ?)", ", ")+
			` ON DUPLICATE KEY UPDATE head_id = VALUES(head_id), schema_version = VALUES(schema_version), compaction_rank = VALUES(compaction_rank)`, vals...); err != nil {
			return err
		}
	}
	return nil
}
