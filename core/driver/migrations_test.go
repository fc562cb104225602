package driver_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestReadMigrations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		files    []string
		versions []int
		err      string
	}{
		{"version order, not name order", []string{"m/0010_late.sql", "m/0002_b.sql", "m/0001_a.sql", "m/README.md"}, []int{1, 2, 10}, ""},
		{"no version prefix", []string{"m/init.sql"}, nil, "must start with a version number"},
		{"duplicate version", []string{"m/0001_a.sql", "m/001_b.sql"}, nil, "share version 1"},
		{"empty", nil, nil, ""},
		{"down files pair with their up file", []string{"m/0001_a.sql", "m/0001_a.down.sql", "m/0002_b.sql"}, []int{1, 2}, ""},
		{"a down file without its up file", []string{"m/0001_a.sql", "m/0002_b.down.sql"}, nil, "no up file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys[f] = &fstest.MapFile{Data: []byte("-- " + f)}
			}
			ms, err := driver.ReadMigrations(fsys, "m")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(tc.versions) {
				t.Fatalf("got %d migrations, want %d", len(ms), len(tc.versions))
			}
			for i, m := range ms {
				if m.Version != tc.versions[i] || !strings.HasSuffix(m.Up, m.Name) {
					t.Errorf("migration %d = %+v, want version %d with its file's text", i, m, tc.versions[i])
				}
				if wantDown := slices.Contains(tc.files, "m/"+strings.TrimSuffix(m.Name, ".sql")+".down.sql"); wantDown != (m.Down != "") {
					t.Errorf("migration %s: down %q, want one: %v", m.Name, m.Down, wantDown)
				}
			}
		})
	}
}
