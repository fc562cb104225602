package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// bump writes version to VERSION and requires every sibling at it in every
// module of the repository, dropping the replace directives of siblings
// (go.work resolves them inside the repository).
func bump(root, version string) error {
	if !releasable(version) {
		return fmt.Errorf("%q is not a release version: want vMAJOR.MINOR.PATCH such as v0.2.0", version)
	}
	published, unpublished, err := findModules(root)
	if err != nil {
		return err
	}
	all := append(published, unpublished...)
	for _, m := range all {
		if err := bumpOne(root, m, version); err != nil {
			return err
		}
	}
	if err := bumpWork(root, all, version); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "VERSION"), []byte(version+"\n"), 0o644)
}

// bumpWork writes go.work: every module in use, and each replaced at
// version with its directory. A module of the workspace required at a
// version that is not published yet must be replaced at that version, or
// the go command looks it up on the proxy; replacing only that version
// keeps any other one an error.
func bumpWork(root string, mods []mod, version string) error {
	file := filepath.Join(root, "go.work")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	w, err := modfile.ParseWork(file, b, nil)
	if err != nil {
		return err
	}
	var use, replace strings.Builder
	slices.SortFunc(mods, func(a, b mod) int { return strings.Compare(a.Dir, b.Dir) })
	for _, m := range mods {
		fmt.Fprintf(&use, "\t./%s\n", m.Dir)
		fmt.Fprintf(&replace, "\t%s %s => ./%s\n", m.Path, version, m.Dir)
	}
	out := fmt.Sprintf("go %s\n\nuse (\n%s)\n\n"+
		"// Every module requires its siblings at the release version (VERSION),\n"+
		"// which the proxy does not serve until it is tagged: here it is the\n"+
		"// working tree. Written by make release; published go.mod files carry no\n"+
		"// replace directive.\nreplace (\n%s)\n", w.Go.Version, use.String(), replace.String())
	return os.WriteFile(file, []byte(out), 0o644)
}

func bumpOne(root string, m mod, version string) error {
	f := m.File
	for _, r := range f.Require {
		if sibling(r.Mod.Path) {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	for _, r := range f.Replace {
		if sibling(r.Old.Path) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	return writeMod(root, m.Dir, f)
}

func writeMod(root, dir string, f *modfile.File) error {
	f.Cleanup()
	b, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, dir, "go.mod"), b, 0o644)
}
