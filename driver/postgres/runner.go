package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// runner runs the statements PostgreSQL shares with MySQL and SQLite
// (sqldb.Registry, sqldb.Subjects, sqldb.Retention), on pgx: q is the
// pool, a connection or a transaction. It numbers their ? placeholders
// and double-quotes their backquoted identifiers (numbered); the arguments
// they take (Go ints, strings, bools, times) need no casts, since each placeholder's context types it, or an untyped
// literal on the simple protocol.
type runner struct{ q querier }

func (r runner) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rows, err := r.q.Query(ctx, numbered(query), args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

func (r runner) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := r.q.Exec(ctx, numbered(query), args...)
	return tag.RowsAffected(), err
}

// pgxRows are pgx's rows as sqldb reads them.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// numbered writes the shared text as PostgreSQL reads it: its ?
// placeholders become $1, $2, ... and its backquoted identifiers
// (`partition`, which MySQL needs quoted) double-quoted ones; string
// literals are copied as they are.
func numbered(query string) string {
	if !strings.ContainsAny(query, "?`") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		switch c := query[i]; c {
		case '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		case '`':
			b.WriteByte('"')
		case '\'':
			// A literal ends at the next quote; '' inside it is a quote
			// and reads as the end of one literal and the start of the next.
			end := strings.IndexByte(query[i+1:], '\'')
			if end < 0 {
				b.WriteString(query[i:]) // unterminated: the server says so
				return b.String()
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// The driver's scopes as sqldb.Scope, sqldb's statements run in: pooled
// is read, autocommit is write, writing is inTx, and reading is one
// read-only repeatable read snapshot.

func (d *Driver) pooled(ctx context.Context, fn func(sqldb.Runner) error) error {
	return d.read(ctx, func() error { return fn(runner{d.pool}) })
}

func (d *Driver) autocommit(ctx context.Context, fn func(sqldb.Runner) error) error {
	return d.write(ctx, func(c *pgxpool.Conn) error { return fn(runner{c}) })
}

func (d *Driver) writing(ctx context.Context, fn func(sqldb.Runner) error) error {
	return d.inTx(ctx, func(tx pgx.Tx) error { return fn(runner{tx}) })
}

func (d *Driver) reading(ctx context.Context, fn func(sqldb.Runner) error) error {
	return d.retry(ctx, stageRead, func() error {
		return d.runTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error { return fn(runner{tx}) })
	})
}

// bounded is writing with each lock wait bounded by the driver's lock
// timeout.
func (d *Driver) bounded(ctx context.Context, fn func(sqldb.Runner) error) error {
	lt := d.lockTimeoutValue()
	return d.writing(ctx, func(tx sqldb.Runner) error {
		if lt != "" {
			if _, err := tx.Exec(ctx, setLockTimeout, lt); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}
