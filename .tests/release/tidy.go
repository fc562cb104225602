package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tidyAll runs go mod tidy in every module of the repository outside the
// workspace, resolving siblings from a proxy built from the working tree,
// so that each go.mod lists what that module needs as a user's build sees
// it. Sibling checksums are left out of go.sum: they are checksums of this
// working tree, not of a release, and the workspace needs none.
func tidyAll(ctx context.Context, root string) error {
	published, unpublished, version, err := lint(root)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sqlstreams-tidy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	all := append(published, unpublished...)
	if err := buildProxy(root, tmp, all, version); err != nil {
		return err
	}
	if err := forgetPublished(); err != nil {
		return err
	}
	env, err := goEnv(tmp)
	if err != nil {
		return err
	}
	for _, m := range all {
		dir := filepath.Join(root, m.Dir)
		if _, err := goCmd(ctx, dir, env, "mod", "tidy"); err != nil {
			return err
		}
		if err := dropSiblingSums(filepath.Join(dir, "go.sum")); err != nil {
			return err
		}
		fmt.Println("tidy", m.Dir)
	}
	return forgetPublished()
}

func dropSiblingSums(file string) error {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !sibling(strings.SplitN(line, " ", 2)[0]) && line != "" {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		return os.Remove(file)
	}
	return os.WriteFile(file, []byte(strings.Join(keep, "")), 0o644)
}
