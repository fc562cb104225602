package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// prefix is the module path every module of the repository starts with.
const prefix = "github.com/sqlstreams/sqlstreams"

// publishedRoots are the directories whose modules users import: every
// go.mod below them is released at the version in VERSION. Modules
// elsewhere (examples, .tests) are never published and may require their
// siblings as they need.
var publishedRoots = []string{"core", "conformance", "driver", "contrib"}

// mod is one module of the working tree.
type mod struct {
	Dir  string // relative to the repository root, slash-separated
	Path string
	File *modfile.File
}

// tagPrefix is the prefix of the module's tags: Go finds a nested module's
// version v at the tag "<dir>/v".
func (m mod) tagPrefix() string { return m.Dir + "/" }

// readVersion reads the release version from root/VERSION.
func readVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("the release version lives in VERSION at the repository root: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if !releasable(v) {
		return "", fmt.Errorf("VERSION holds %q: want a release version such as v0.1.0 (semver, no build metadata, not a pseudo-version)", v)
	}
	return v, nil
}

// releasable reports a version a module can be tagged with and a user can
// require: canonical semver, and not the v0.0.0 that only a replace
// directive can satisfy.
func releasable(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == v && v != "v0.0.0" && !strings.HasPrefix(v, "v0.0.0-")
}

// findModules returns every module of the repository, published ones
// first, each in directory order.
func findModules(root string) (published, unpublished []mod, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		m, err := readMod(p, rel)
		if err != nil {
			return err
		}
		if isPublished(rel) {
			published = append(published, m)
		} else {
			unpublished = append(unpublished, m)
		}
		return nil
	})
	return published, unpublished, err
}

func isPublished(dir string) bool {
	top, _, _ := strings.Cut(dir, "/")
	return slices.Contains(publishedRoots, top)
}

func readMod(file, dir string) (mod, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return mod{}, err
	}
	f, err := modfile.Parse(file, b, nil)
	if err != nil {
		return mod{}, err
	}
	if f.Module == nil {
		return mod{}, fmt.Errorf("%s has no module line", file)
	}
	return mod{Dir: dir, Path: f.Module.Mod.Path, File: f}, nil
}

// sibling reports a module path of this repository.
func sibling(path string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }
