package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// buildProxy publishes mods at version into dir laid out as a GOPROXY
// (<escaped path>/@v/{list,V.info,V.mod,V.zip}), from the working tree as
// it is: what a tag of this commit would serve.
func buildProxy(root, dir string, mods []mod, version string) error {
	for _, m := range mods {
		if err := publish(root, dir, m, version); err != nil {
			return fmt.Errorf("publish %s: %w", m.Path, err)
		}
	}
	return nil
}

func publish(root, dir string, m mod, version string) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(root, m.Dir, "go.mod"))
	if err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	files := map[string][]byte{"list": []byte(version + "\n"), version + ".info": []byte(info), version + ".mod": gomod}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			return err
		}
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(z, module.Version{Path: m.Path, Version: version}, filepath.Join(root, m.Dir)); err != nil {
		z.Close()
		return err
	}
	return z.Close()
}

// goEnv is the environment of a go command that resolves the repository's
// modules from the proxy at dir only, and everything else as the machine
// does: no workspace, no checksum database for modules nobody has seen.
func goEnv(dir string) ([]string, error) {
	def, err := goEnvValue("GOPROXY")
	if err != nil {
		return nil, err
	}
	flags, err := goEnvValue("GOFLAGS")
	if err != nil {
		return nil, err
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOPROXY=file://"+filepath.ToSlash(dir)+","+def,
		"GONOSUMDB="+prefix,
		"GOFLAGS="+strings.TrimSpace(flags+" -mod=mod"),
		// The go command's index of the module cache takes a module
		// version as immutable; the working tree's is not, between runs.
		"GODEBUG=goindex=0",
	), nil
}

func goEnvValue(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// forgetPublished removes the repository's modules from the module cache:
// an earlier run's copies at the same version would otherwise be used
// instead of this working tree's. Only this repository's paths are removed.
func forgetPublished() error {
	cache, err := goEnvValue("GOMODCACHE")
	if err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(cache, filepath.FromSlash(prefix)), filepath.Join(cache, "cache", "download", filepath.FromSlash(prefix))} {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(path, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// goCmd runs the go command in dir with env, and returns its output; a
// failure carries the output.
func goCmd(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out.String())
	}
	return out.String(), nil
}
