package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// SetCursors implements driver.Driver. In one transaction it locks every
// cursor row of the group FOR UPDATE, in partition order as RegisterGroup
// does, waiting for claims in flight (bounded like an append's wait: FOR
// UPDATE WAIT n on MariaDB, innodb_lock_wait_timeout on MySQL, and not run
// again when it ends), materializes the group's batches on the partitions
// it moves, then sets the positions. Exceptions are not touched.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	parts := make([]int, 0, len(p.Positions))
	for part := range p.Positions {
		parts = append(parts, part)
	}
	slices.Sort(parts)
	return d.inTx(ctx, nil, func(tx querier) error {
		have := map[int]bool{}
		err := sqldb.EachRow(ctx, tx, "SELECT `partition` FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition` FOR UPDATE"+d.waitClause(),
			[]any{p.StreamID, p.Group}, func(r *sql.Rows) error {
				var part int
				err := r.Scan(&part)
				have[part] = true
				return err
			})
		if lockWaitEnded(err) {
			return finalError{&driver.Error{Kind: driver.ErrConflict, Err: driver.Redact(fmt.Errorf("group %q: lock cursors: %w", p.Group, err), d.secrets...),
				Advice: "another transaction has held the group's cursors for the whole lock timeout (a claim holds one only briefly); retry"}}
		}
		if err != nil {
			return err
		}
		if len(have) == 0 {
			return driver.GroupNotFound(p.Group)
		}
		for _, part := range parts {
			if !have[part] {
				return fmt.Errorf("group %q has no cursor in partition %d: %w", p.Group, part, driver.ErrGroupNotFound)
			}
		}
		if len(parts) == 0 {
			return nil
		}
		// The group's batches on the partitions it moves become exception
		// rows, so that every batch member stays at or below its cursor and
		// a claim past a cursor moved back passes over them as it passes
		// over any row with an exception.
		if _, err := explodeWhole(ctx, tx, p.StreamID, "group_name = ? AND `partition` IN ("+sqldb.Placeholders(len(parts))+")",
			append([]any{p.Group}, sqldb.Args(parts)...), " FOR UPDATE"); err != nil {
			return err
		}
		args := make([]any, 0, 3*len(parts)+2)
		for _, part := range parts {
			args = append(args, part, p.Positions[part])
		}
		args = append(append(args, p.StreamID, p.Group), sqldb.Args(parts)...)
		_, err = tx.ExecContext(ctx, "UPDATE group_cursor SET position = CASE `partition`"+strings.Repeat(" WHEN ? THEN ?", len(parts))+
			" ELSE position END WHERE stream_id = ? AND group_name = ? AND `partition` IN ("+sqldb.Placeholders(len(parts))+")", args...)
		return err
	})
}

// ReadRows implements driver.Driver. It reads the log in windows along the
// (partition, id) index for one partition or the primary key for all, from
// the bound in the reading direction; each window is one query that returns
// the payload and headers of the rows the filter keeps only (the others
// come back as ids), so a filter that keeps little costs little but the
// rows it examines, at most p.MaxScan of them. A window starts at the size
// asked for and doubles, up to 512 rows. No transaction: rows are read as
// committed when each window runs.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	if err := d.check(); err != nil {
		return driver.ReadRowsResult{}, err
	}
	var res driver.ReadRowsResult
	if p.Limit <= 0 {
		return res, nil
	}
	err := d.withLog(ctx, p.StreamID, func() error {
		res = driver.ReadRowsResult{}
		return d.readRows(ctx, p, &res)
	})
	if mysqlErrno(err) == errNoSuchTable {
		return driver.ReadRowsResult{}, fmt.Errorf("mysql %s: stream %d: %w", d.where, p.StreamID, driver.ErrStreamNotFound)
	}
	if err != nil {
		return driver.ReadRowsResult{}, d.wrap(ctx, err, opRead)
	}
	return res, nil
}

func (d *Driver) readRows(ctx context.Context, p driver.ReadRowsParams, res *driver.ReadRowsResult) error {
	budget := p.MaxScan
	if budget <= 0 {
		budget = p.Limit
	}
	filter, fargs := sqldb.VersionFilter("m.schema_version", p.Versions)
	if p.HasKey {
		filter += " AND m.msg_key <=> ?"
		fargs = append(fargs, []byte(p.Key))
	}
	filtered := p.Versions != nil || p.HasKey
	from := " FROM " + logTable(p.StreamID) + " m FORCE INDEX (PRIMARY) WHERE "
	var partArgs []any
	if p.Partition >= 0 {
		from = " FROM " + logTable(p.StreamID) + " m FORCE INDEX (by_partition) WHERE m.`partition` = ? AND "
		partArgs = []any{p.Partition}
	}
	from += "m.id > ? AND m.id < ?"
	order := " ORDER BY m.id"
	if p.Descending {
		order += " DESC"
	}
	query := "SELECT m.id, m.`partition`, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, CASE WHEN " + filter +
		" THEN m.payload ELSE '' END, CASE WHEN " + filter + " THEN m.headers END, m.produced_at, " + filter + from + order + " LIMIT ?"
	lo, hi := p.AfterID, int64(math.MaxInt64)
	if p.BeforeID > 0 {
		hi = p.BeforeID
	}
	window := p.Limit
	if filtered {
		window = max(window, driver.MinClaimWindow)
	}
	window = min(window, driver.MaxClaimWindow)
	type read struct {
		row   driver.Row
		match bool
	}
	for remaining := budget; ; {
		w := min(window, remaining)
		args := append(append(append(append(append(make([]any, 0, 3*len(fargs)+4), fargs...), fargs...), fargs...), partArgs...), lo, hi, w)
		var got []read
		if err := sqldb.EachRow(ctx, d.db, query, args, func(r *sql.Rows) error {
			var rd read
			var err error
			rd.row, err = scanRow(r, &rd.match)
			got = append(got, rd)
			return err
		}); err != nil {
			return err
		}
		examined := 0
		for _, rd := range got {
			examined++
			res.Last = rd.row.ID
			if rd.match {
				res.Rows = append(res.Rows, rd.row)
				if len(res.Rows) == p.Limit {
					break
				}
			}
		}
		remaining -= examined
		if p.Descending {
			hi = res.Last
		} else {
			lo = res.Last
		}
		switch {
		case examined < len(got):
			// Rows past Last came back unexamined.
			return nil
		case len(got) < w:
			res.Done = true
			return nil
		case len(res.Rows) == p.Limit || remaining <= 0:
			var one int
			err := d.db.QueryRowContext(ctx, "SELECT 1"+from+" LIMIT 1", append(slices.Clone(partArgs), lo, hi)...).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				res.Done = true
				return nil
			}
			return err
		}
		window = min(2*window, driver.MaxClaimWindow)
	}
}
