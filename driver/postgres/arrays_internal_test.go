package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestArrayParametersAllocate checks that encoding a claim's worth of ids
// does not allocate per id, as pgx's own []int64 encoding does.
func TestArrayParametersAllocate(t *testing.T) {
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(1<<32 + i) // boxed ints of 256 and more allocate
	}
	m := pgtype.NewMap()
	sd := &pgconn.StatementDescription{ParamOIDs: []uint32{pgtype.Int8ArrayOID}}
	allocs := func(arg any) float64 {
		return testing.AllocsPerRun(20, func() {
			var b pgx.ExtendedQueryBuilder
			if err := b.Build(m, sd, []any{arg}); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain, ours := allocs(ids), allocs(int8s(ids))
	if plain < float64(len(ids)) {
		t.Fatalf("pgx's own encoding of %d ids allocated %.0f times; this test no longer measures what it should", len(ids), plain)
	}
	if ours > 20 {
		t.Errorf("int8s of %d ids allocated %.0f times (pgx's own encoding: %.0f); want a few, whatever the length", len(ids), ours, plain)
	}
}
