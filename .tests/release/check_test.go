package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintRepository: the repository as committed can be released at the
// version in VERSION.
func TestLintRepository(t *testing.T) {
	if _, _, _, err := lint("../.."); err != nil {
		t.Fatal(err)
	}
}

// TestLintRefuses: each way a go.mod keeps a user from resolving a release
// is refused with the file and line and what to do, on a copy of the
// repository's go.mod files changed one way each.
func TestLintRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dir, edit, want string
	}{
		{"replace directive", "driver/sqlite", "\nreplace github.com/sqlstreams/sqlstreams/core => ../../core\n",
			"replace github.com/sqlstreams/sqlstreams/core: published modules carry no replace directive"},
		{"replace of a third-party module", "core", "\nreplace golang.org/x/mod => golang.org/x/mod v0.1.0\n",
			"replace golang.org/x/mod"},
		{"exclude directive", "conformance", "\nexclude golang.org/x/mod v0.1.0\n", "exclude golang.org/x/mod"},
		{"sibling at v0.0.0", "contrib/dsn", "\nrequire github.com/sqlstreams/sqlstreams/core v0.0.0\n",
			"requires github.com/sqlstreams/sqlstreams/core v0.0.0: every sibling is required at the release version v0.1.0"},
		{"sibling at the zero pseudo-version", "contrib/otel", "\nrequire github.com/sqlstreams/sqlstreams/driver/sqlite v0.0.0-00010101000000-000000000000\n",
			"driver/sqlite v0.0.0-00010101000000-000000000000"},
		{"sibling at an older release", "driver/mysql", "\nrequire github.com/sqlstreams/sqlstreams/core v0.0.9\n",
			"core v0.0.9"},
		{"unpublished sibling", "contrib/fx", "\nrequire github.com/sqlstreams/sqlstreams/tests/drivers v0.1.0\n",
			"tests/drivers, which is never published: move what needs it to a test-only module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := copyModules(t, "../..")
			appendTo(t, filepath.Join(root, tc.dir, "go.mod"), tc.edit)
			_, _, _, err := lint(root)
			if err == nil {
				t.Fatalf("lint passed with %q added to %s/go.mod", strings.TrimSpace(tc.edit), tc.dir)
			}
			for _, want := range []string{tc.dir + "/go.mod:", tc.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestLintVersion: VERSION must hold a version a user can require.
func TestLintVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "0.1.0", "v0.0.0", "v0.1", "v0.1.0+build", "v0.0.0-20260101000000-abcdefabcdef", "latest"} {
		root := copyModules(t, "../..")
		if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := lint(root); err == nil || !strings.Contains(err.Error(), "VERSION") {
			t.Errorf("VERSION %q: got %v, want an error about VERSION", v, err)
		}
	}
}

// TestBump: bump requires every sibling at the new version in every
// module, drops replace directives of siblings, and leaves a tree that
// lints clean at that version.
func TestBump(t *testing.T) {
	t.Parallel()
	root := copyModules(t, "../..")
	appendTo(t, filepath.Join(root, "driver/sqlite/go.mod"), "\nreplace github.com/sqlstreams/sqlstreams/core => ../../core\n")
	if err := bump(root, "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	if _, _, v, err := lint(root); err != nil || v != "v0.2.0" {
		t.Fatalf("after bump: version %q, %v", v, err)
	}
	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(work), "github.com/sqlstreams/sqlstreams/core v0.2.0 => ./core") {
		t.Errorf("go.work does not replace core v0.2.0 with ./core:\n%s", work)
	}
	if err := bump(root, "v0.2"); err == nil {
		t.Error("bump accepted v0.2")
	}
}

// copyModules copies VERSION, go.work and every go.mod of the repository
// at from into a new directory.
func copyModules(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() || !(d.Name() == "go.mod" || rel == "VERSION" || rel == "go.work") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func appendTo(t *testing.T, file, text string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(b, text...), 0o644); err != nil {
		t.Fatal(err)
	}
}
