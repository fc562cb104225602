package sqldb

import (
	"cmp"
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Runner runs the statements of the schema registry's storage (Registry,
// Subjects), whatever the engine runs them on: On adapts a database/sql
// Querier (MySQL, SQLite), and PostgreSQL adapts pgx, so that the three
// engines run one registry. The statements name their values by ?, and
// contain no ? otherwise, so that an engine may number them ($1, $2, ...).
// Its arguments are Go ints, int64s, strings, bools and the engine's time
// values, which every engine accepts with or without parameter types
// (PostgreSQL's simple protocol sends them as untyped literals).
type Runner interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Exec runs a statement and reports how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// Rows are a statement's rows, as *sql.Rows reads them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// On runs a Runner's statements on q.
func On(q Querier) Runner { return onQuerier{q} }

type onQuerier struct{ q Querier }

func (o onQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := o.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err // not a nil *sql.Rows in a non-nil Rows
	}
	return rows, nil
}

func (o onQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return Affected(o.q.ExecContext(ctx, query, args...))
}

// eachRowOn runs query on r and calls fn for each row until done reports
// true, stopping at fn's first error; it also reports an error closing
// the rows, which a driver may otherwise not see (a lost connection after
// the last row). It reports one error, the read's before the close's:
// pgx reports a failed read from Close too, and a user would read it twice.
func eachRowOn(ctx context.Context, r Runner, query string, args []any, done func() bool, fn func(Rows) error) error {
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for !done() && rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	closed := rows.Close()
	return cmp.Or(rows.Err(), closed)
}

// collectOn runs query on r and returns each row as scan reads it.
func collectOn[T any](ctx context.Context, r Runner, query string, args []any, scan func(driver.RowScanner) (T, error)) ([]T, error) {
	var out []T
	err := eachRowOn(ctx, r, query, args, never, func(row Rows) error {
		v, err := scan(row)
		out = append(out, v)
		return err
	})
	return out, err
}

func never() bool { return false }

// scanRow reads the first row of query on r into dest; found is false
// when there is none.
func scanRow(ctx context.Context, r Runner, query string, args []any, dest ...any) (found bool, err error) {
	err = eachRowOn(ctx, r, query, args, func() bool { return found }, func(row Rows) error {
		found = true
		return row.Scan(dest...)
	})
	return found, err
}

// firstOn reads the first row of query on r as scan reads it; found is
// false when there is none.
func firstOn[T any](ctx context.Context, r Runner, query string, args []any, scan func(driver.RowScanner) (T, error)) (v T, found bool, err error) {
	err = eachRowOn(ctx, r, query, args, func() bool { return found }, func(row Rows) error {
		found = true
		v, err = scan(row)
		return err
	})
	return v, found, err
}

// mapOn is Map on a Runner.
func mapOn[K comparable, V any](ctx context.Context, r Runner, query string, args ...any) (map[K]V, error) {
	out := map[K]V{}
	err := eachRowOn(ctx, r, query, args, never, func(row Rows) error {
		var k K
		var v V
		err := row.Scan(&k, &v)
		out[k] = v
		return err
	})
	return out, err
}

// markOn is Mark on a Runner.
func markOn[K comparable](ctx context.Context, r Runner, query string, args []any, marked map[K]bool) error {
	return eachRowOn(ctx, r, query, args, never, func(row Rows) error {
		var k K
		err := row.Scan(&k)
		marked[k] = true
		return err
	})
}

// Over adapts the scope of a database/sql driver, which hands fn a
// Querier, to a Scope.
func Over(run func(context.Context, func(Querier) error) error) Scope {
	return func(ctx context.Context, fn func(Runner) error) error {
		return run(ctx, func(q Querier) error { return fn(On(q)) })
	}
}

// Value reads the one column of the first row of query on r (an aggregate
// always has one row).
func Value[T any](ctx context.Context, r Runner, query string, args ...any) (T, error) {
	var v T
	_, err := scanRow(ctx, r, query, args, &v)
	return v, err
}
