package sqldb

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
	"time"
)

// TestMigrationTable: a migration's Record creates the table and records
// the version at the server's time; the steps' Record writes the process's
// time with the engine's verb, and going down removes the record.
func TestMigrationTable(t *testing.T) {
	t.Parallel()
	table := MigrationTable{Create: "CREATE T", Insert: "INSERT IGNORE", Now: "NOW()", At: func(time.Time) any { return "at" }}
	ms, err := table.Migrations(fstest.MapFS{"migrations/0003_x.sql": {Data: []byte("UP")}})
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	if want := "CREATE T;\nINSERT IGNORE INTO sqlstreams_migration (version, applied_at) VALUES (3, NOW());\n"; ms[0].Record != want {
		t.Fatalf("Record %q, want %q", ms[0].Record, want)
	}
	q := &execLog{}
	s := MigrationRecords{Table: table, Runner: On(q)}
	if err := s.Record(context.Background(), 3, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(context.Background(), 3, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"INSERT IGNORE INTO sqlstreams_migration (version, applied_at) VALUES (?, ?)[3 at]", "DELETE FROM sqlstreams_migration WHERE version = ?[3]"}
	if !slices.Equal(q.ran, want) {
		t.Fatalf("ran %q, want %q", q.ran, want)
	}
}
