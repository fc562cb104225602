package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

//go:embed outside
var outside embed.FS

// check proves a release of the working tree the way a user meets it:
// the static checks, then every published module served from a file proxy
// and used from directories outside the repository with no workspace.
func check(ctx context.Context, root string) error {
	published, _, version, err := lint(root)
	if err != nil {
		return err
	}
	fmt.Printf("release-check: %d modules at %s have no replace directive and require their siblings at %s\n", len(published), version, version)
	tmp, err := os.MkdirTemp("", "sqlstreams-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxy := filepath.Join(tmp, "proxy")
	if err := buildProxy(root, proxy, published, version); err != nil {
		return err
	}
	if err := forgetPublished(); err != nil {
		return err
	}
	defer forgetPublished()
	env, err := goEnv(proxy)
	if err != nil {
		return err
	}
	steps := []struct {
		name string
		run  func(context.Context, string, []string, string) error
	}{
		{"outside program (core + driver/sqlite)", checkApp},
		{"go install of the CLI by version", checkCLI},
		{"third-party driver runs the whole conformance suite", checkThirdPartyDriver},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.run(ctx, tmp, env, version); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("release-check: ok  %s (%s)\n", s.name, time.Since(start).Round(time.Second))
	}
	return nil
}

// writeTemplate copies outside/<from> into dir, with {{VERSION}} replaced.
func writeTemplate(from, dir, version string) error {
	return fs.WalkDir(outside, "outside/"+from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := outside.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(p), ".tmpl")
		return os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(string(b), "{{VERSION}}", version)), 0o644)
	})
}

// newModule makes dir a module of its own that gets mods at query (a
// version, or latest as the README's install lines say).
func newModule(ctx context.Context, dir, path string, env []string, query string, mods ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := goCmd(ctx, dir, env, "mod", "init", path); err != nil {
		return err
	}
	get := []string{"get"}
	for _, m := range mods {
		get = append(get, prefix+"/"+m+"@"+query)
	}
	if _, err := goCmd(ctx, dir, env, get...); err != nil {
		return err
	}
	_, err := goCmd(ctx, dir, env, "mod", "tidy")
	return err
}

func checkApp(ctx context.Context, tmp string, env []string, version string) error {
	dir := filepath.Join(tmp, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeTemplate("app", dir, version); err != nil {
		return err
	}
	// As the README's install section: @latest, which the proxy answers
	// with the release being checked.
	if err := newModule(ctx, dir, "example.com/app", env, "latest", "core", "driver/sqlite"); err != nil {
		return err
	}
	if got, err := goCmd(ctx, dir, env, "list", "-m", "-f", "{{.Version}}", prefix+"/core"); err != nil || strings.TrimSpace(got) != version {
		return fmt.Errorf("go get core@latest chose %q, want %s (%v)", strings.TrimSpace(got), version, err)
	}
	deps, err := goCmd(ctx, dir, env, "list", "-deps", ".")
	if err != nil {
		return err
	}
	for _, pkg := range strings.Fields(deps) {
		if pkg == prefix+"/conformance" || strings.HasPrefix(pkg, prefix+"/conformance/") ||
			strings.HasPrefix(pkg, prefix+"/driver/") && !strings.HasPrefix(pkg, prefix+"/driver/sqlite") {
			return fmt.Errorf("a program that imports core and driver/sqlite compiles %s", pkg)
		}
	}
	if _, err := goCmd(ctx, dir, env, "build", "-o", "app", "."); err != nil {
		return err
	}
	out, err := runBinary(ctx, filepath.Join(dir, "app"))
	if err != nil {
		return err
	}
	if want := "consumed A-1 (v1)\nconsumed A-2 (v1)\nconsumed A-3 (v1)\nacked 3\n"; out != want {
		return fmt.Errorf("the program printed %q, want %q", out, want)
	}
	return nil
}

func checkCLI(ctx context.Context, tmp string, env []string, version string) error {
	bin := filepath.Join(tmp, "bin")
	env = append(env, "GOBIN="+bin)
	if _, err := goCmd(ctx, tmp, env, "install", prefix+"/contrib/cli/cmd/sqlstreams@"+version); err != nil {
		return err
	}
	out, err := goCmd(ctx, tmp, env, "version", "-m", filepath.Join(bin, "sqlstreams"))
	if err != nil {
		return err
	}
	if !strings.Contains(out, prefix+"/contrib/cli\t"+version) {
		return fmt.Errorf("the installed binary was not built from contrib/cli %s:\n%s", version, out)
	}
	help, err := runBinary(ctx, filepath.Join(bin, "sqlstreams"), "--help")
	if err != nil {
		return err
	}
	if !strings.Contains(help, "sqlstreams") || !strings.Contains(help, "streams") {
		return fmt.Errorf("sqlstreams --help printed no command list:\n%s", help)
	}
	return nil
}

func checkThirdPartyDriver(ctx context.Context, tmp string, env []string, version string) error {
	dir := filepath.Join(tmp, "xdriver")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeTemplate("xdriver", dir, version); err != nil {
		return err
	}
	if err := newModule(ctx, dir, "example.com/xdriver", env, version, "core", "driver/sqlite", "conformance"); err != nil {
		return err
	}
	if _, err := goCmd(ctx, dir, env, "vet", "./..."); err != nil {
		return err
	}
	out, err := goCmd(ctx, dir, env, "test", "-count=1", "-timeout=15m", "-json", "./...")
	if err != nil {
		return err
	}
	passed, err := countPassed(out)
	if err != nil {
		return err
	}
	fmt.Printf("release-check: the out-of-tree driver passed %d conformance tests\n", passed)
	return nil
}
