package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// TestArrayParameters sends each array type through every way pgx sends a
// statement (prepared and described, or with its parameters' types unknown
// and the arrays in their text form) and reads it back unchanged.
func TestArrayParameters(t *testing.T) {
	t.Parallel()
	key, quoted, empty := "k-1", `a "b" \c, {d} NULL`, ""
	ids, strs, bytes := postgres.ArrayParameters([]int64{1, 300, 1 << 40, -5, 0}, []*string{&key, nil, &quoted, &empty},
		[][]byte{[]byte("ab"), {}, {0, 1, '"', '\\', 0xff}, nil})
	emptyIDs, _, _ := postgres.ArrayParameters([]int64{}, nil, nil)
	nullIDs, _, _ := postgres.ArrayParameters(nil, nil, nil)
	cases := []struct {
		name  string
		query string
		in    any
		check func(t *testing.T, row pgx.Row)
	}{
		{"bigint", `SELECT $1::bigint[]`, ids, func(t *testing.T, row pgx.Row) {
			var out []int64
			if err := row.Scan(&out); err != nil || !slices.Equal(out, []int64{1, 300, 1 << 40, -5, 0}) {
				t.Fatalf("got %v, %v", out, err)
			}
		}},
		{"bigint empty", `SELECT cardinality($1::bigint[])`, emptyIDs, func(t *testing.T, row pgx.Row) {
			var n int
			if err := row.Scan(&n); err != nil || n != 0 {
				t.Fatalf("got %d, %v", n, err)
			}
		}},
		{"bigint null", `SELECT $1::bigint[] IS NULL`, nullIDs, func(t *testing.T, row pgx.Row) {
			var null bool
			if err := row.Scan(&null); err != nil || !null {
				t.Fatalf("got %v, %v", null, err)
			}
		}},
		{"text", `SELECT $1::text[]`, strs, func(t *testing.T, row pgx.Row) {
			var out []*string
			if err := row.Scan(&out); err != nil || len(out) != 4 || *out[0] != key || out[1] != nil || *out[2] != quoted || *out[3] != "" {
				t.Fatalf("got %v, %v", out, err)
			}
		}},
		{"bytea", `SELECT $1::bytea[]`, bytes, func(t *testing.T, row pgx.Row) {
			var out [][]byte
			if err := row.Scan(&out); err != nil || len(out) != 4 || string(out[0]) != "ab" || out[1] == nil || len(out[1]) != 0 ||
				string(out[2]) != "\x00\x01\"\\\xff" || out[3] != nil {
				t.Fatalf("got %q, %v", out, err)
			}
		}},
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			cfg, err := pgx.ParseConfig(baseURL())
			if err != nil {
				t.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.check(t, conn.QueryRow(ctx, c.query, c.in)) })
			}
		})
	}
}
