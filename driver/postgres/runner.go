package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// runner runs the statements PostgreSQL shares with MySQL and SQLite
// (sqldb.Registry, sqldb.Subjects, sqldb.Retention), on pgx: q is the
// pool, a connection or a transaction. It numbers their ? placeholders
// and double-quotes their backquoted identifiers (pgText); the arguments they take (Go ints, strings, bools, times)
// need no casts, since each placeholder's context types it, or an untyped
// literal on the simple protocol.
type runner struct{ q pgxRunner }

// pgxRunner is what the pool, its connections and transactions share.
type pgxRunner interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (r runner) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rows, err := r.q.Query(ctx, pgText(query), args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

func (r runner) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := r.q.Exec(ctx, pgText(query), args...)
	return tag.RowsAffected(), err
}

// pgxRows are pgx's rows as sqldb reads them.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// pgText is the shared text of query as PostgreSQL reads it.
func pgText(query string) string { return numbered(quoteIdents(query)) }

// quoteIdents writes the identifiers query quotes with backquotes, as
// MySQL does (`partition`), in double quotes, leaving string literals as
// they are.
func quoteIdents(query string) string {
	if strings.IndexByte(query, '`') < 0 {
		return query
	}
	b := []byte(query)
	inString := false
	for i, c := range b {
		switch {
		case c == '\'':
			inString = !inString // '' within a literal toggles twice
		case c == '`' && !inString:
			b[i] = '"'
		}
	}
	return string(b)
}

// numbered turns the ? placeholders of query into $1, $2, ...
func numbered(query string) string {
	n := strings.Count(query, "?")
	if n == 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 2*n)
	for i := 1; ; i++ {
		at := strings.IndexByte(query, '?')
		if at < 0 {
			break
		}
		b.WriteString(query[:at])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(i))
		query = query[at+1:]
	}
	b.WriteString(query)
	return b.String()
}
