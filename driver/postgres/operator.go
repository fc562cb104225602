package postgres

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// SetCursors implements driver.Driver (sqldb.SetCursors). One transaction
// locks every cursor of the group in partition order (FOR UPDATE, waiting
// for the claims in flight, bounded by the driver's lock timeout), then sets
// the given positions. Exceptions stay as they are: the main claim passes
// over rows the group has one for (see claimPartition). The group's batches
// on the partitions it moves are materialized first, so that every batch
// member stays at or below its cursor and a leased row behind a cursor
// moved back is passed over as an exception.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	lt := d.lockTimeoutValue()
	err := d.writing(ctx, func(tx sqldb.Runner) error {
		if lt != "" {
			if _, err := tx.Exec(ctx, saveAndSetLockTimeout, lt); err != nil {
				return err
			}
		}
		err := sqldb.SetCursors(ctx, tx, p, sqldb.CursorSteps{Lock: " FOR UPDATE", Release: func(parts []int) error {
			if lt != "" {
				if _, err := tx.Exec(ctx, restoreLockTimeout); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, materializeBatches(p.StreamID, `b.stream_id = $1::bigint AND b.group_name = $2::text AND b.partition = ANY($3::integer[])`,
				batchOrder, `FOR UPDATE`), p.StreamID, p.Group, int32s(parts))
			return err
		}})
		// Rows behind a cursor moved back are claimable again: wake the
		// consumers (delivered at commit).
		if ch := d.channel(p.StreamID); err == nil && ch != "" && len(p.Positions) > 0 {
			_, err = tx.Exec(ctx, `SELECT pg_notify(?, '')`, ch)
		}
		return err
	})
	var de *driver.Error
	if errors.As(err, &de) && de.Kind == driver.ErrConflict && de.Advice == "" {
		de.Advice = "claims or a registration of the group held its cursors for longer than the lock timeout; nothing was changed, try again"
	}
	return err
}

// ReadRows implements driver.Driver in one statement: it takes up to
// MaxScan ids in order from the (partition, id) index for one partition or
// the primary key otherwise, marks those the filters keep, stops at the
// Limit-th kept row, reads the payloads of the kept rows only, and finds out
// with one index probe whether any row lies past the last one examined.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	query, args := readRowsQuery(p)
	var res driver.ReadRowsResult
	err := d.retry(ctx, stageRead, func() error {
		return d.runTx(ctx, readRowsTx, func(tx pgx.Tx) error {
			res = driver.ReadRowsResult{}
			return eachRow(ctx, tx, query, args, func(rows pgx.Rows) error {
				var lastID *int64
				var more bool
				var o optionalRow
				if err := rows.Scan(append([]any{&lastID, &more}, o.dest()...)...); err != nil {
					return err
				}
				if lastID != nil {
					res.Last = *lastID
				}
				res.Done = !more
				if o.id == nil {
					return nil // nothing kept: the summary alone
				}
				r, err := o.row()
				if r.Payload == nil {
					r.Payload = []byte{}
				}
				res.Rows = append(res.Rows, r)
				return err
			})
		})
	})
	if err != nil {
		return driver.ReadRowsResult{}, err
	}
	return res, nil
}

// readRowsTx is ReadRows' transaction. Sequential and bitmap scans are off
// so that the planner walks an index in order whatever its statistics say
// (none on a new log; and a probe for the next row past a bound is cheap
// for a sequential scan only in its estimate).
var readRowsTx = pgx.TxOptions{AccessMode: pgx.ReadOnly,
	BeginQuery: "BEGIN READ ONLY; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off"}

// readRowsQuery is ReadRows' statement. It returns one row per row read,
// each also carrying the last id examined and whether any row lies past it,
// or one row with only those when it reads none.
func readRowsQuery(p driver.ReadRowsParams) (string, []any) {
	limit := max(p.Limit, 0)
	scan := p.MaxScan
	if scan <= 0 {
		scan = limit
	}
	scan = min(scan, math.MaxInt32)
	var args []any
	arg := func(v any, typ string) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)) + "::" + typ
	}
	var bounds []string
	if p.Partition >= 0 {
		// A range rather than "=": the planner drops an equality's column
		// from the ORDER BY, and could then walk the primary key filtering
		// on the partition, examining any number of rows of the others.
		part := arg(int32(min(p.Partition, math.MaxInt32)), "integer")
		bounds = append(bounds, "m.partition >= "+part+" AND m.partition <= "+part)
	}
	after := arg(p.AfterID, "bigint")
	bounds = append(bounds, "m.id > "+after)
	before := ""
	if p.BeforeID > 0 {
		before = arg(p.BeforeID, "bigint")
		bounds = append(bounds, "m.id < "+before)
	}
	keep := []string{"TRUE"}
	if p.Versions != nil {
		keep = append(keep, "m.schema_version = ANY("+arg(int32s(p.Versions), "integer[]")+")")
	}
	if p.HasKey {
		keep = append(keep, "m.msg_key = "+arg(p.Key, "text"))
	}
	// With one partition, ordering by (partition, id) makes its index the
	// only one that yields the order.
	dir, last, past := "ASC", "max", "m.id > COALESCE(sm.last, "+after+")"
	if p.Descending {
		dir, last = "DESC", "min"
		if before != "" {
			past = "m.id < COALESCE(sm.last, " + before + ")"
		} else {
			past = "m.id <= COALESCE(sm.last - 1, " + strconv.FormatInt(math.MaxInt64, 10) + ")"
		}
	}
	order := "m.id " + dir
	if p.Partition >= 0 {
		order = "m.partition " + dir + ", m.id " + dir
	}
	scanArg, limitArg := arg(int32(scan), "integer"), arg(int64(limit), "bigint")
	table := logTable(p.StreamID)
	where := strings.Join(bounds, " AND ")
	// e holds the examined rows: those before the Limit-th kept one, and it.
	query := `WITH s AS (
			SELECT m.id, ` + strings.Join(keep, " AND ") + ` AS keep FROM ` + table + ` m WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ` + scanArg + `),
		c AS (SELECT id, keep, count(*) FILTER (WHERE keep) OVER (ORDER BY id ` + dir + ` ROWS UNBOUNDED PRECEDING) AS nth FROM s),
		e AS MATERIALIZED (SELECT id, keep FROM c WHERE nth < ` + limitArg + ` OR (nth = ` + limitArg + ` AND keep)),
		sm AS (SELECT ` + last + `(id) AS last FROM e)
		SELECT sm.last, (SELECT m.id FROM ` + table + ` m WHERE ` + where + ` AND ` + past + ` ORDER BY ` + order + ` LIMIT 1) IS NOT NULL, ` + strings.ReplaceAll(rowColumns, "m.", "r.") + `
		FROM sm LEFT JOIN LATERAL (SELECT ` + rowColumns + ` FROM e JOIN ` + table + ` m ON m.id = e.id WHERE e.keep) r ON true
		ORDER BY r.id ` + dir
	return query, args
}
