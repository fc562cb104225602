// Command release keeps the repository's modules releasable together at the
// version in VERSION, and proves it the way a user meets a release.
//
//	go run ./.tests/release bump v0.2.0   set VERSION and every sibling requirement
//	go run ./.tests/release check         static checks, then publish to a file proxy and use it from outside
//	go run ./.tests/release lint          the static checks alone (fast; make vet runs them)
//	go run ./.tests/release tidy          go mod tidy every module against the working tree's modules
//	go run ./.tests/release tags          the tags to push for VERSION
//
// Run it from the repository root (the Makefile does).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release bump VERSION | check | lint | tidy | tags")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 25*time.Minute)
	defer cancel()
	if err := run(ctx, ".", os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, cmd string, args []string) error {
	switch cmd {
	case "bump":
		if len(args) != 1 {
			return errors.New("bump takes the new version, e.g. bump v0.2.0")
		}
		return bump(root, args[0])
	case "lint":
		_, _, _, err := lint(root)
		return err
	case "check":
		return check(ctx, root)
	case "tidy":
		return tidyAll(ctx, root)
	case "tags":
		published, _, version, err := lint(root)
		if err != nil {
			return err
		}
		for _, m := range published {
			fmt.Println(m.tagPrefix() + version)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want bump, check, lint, tidy or tags", cmd)
}

// lint reads the modules and VERSION and fails with every problem found.
func lint(root string) (published, unpublished []mod, version string, err error) {
	version, err = readVersion(root)
	if err != nil {
		return nil, nil, "", err
	}
	published, unpublished, err = findModules(root)
	if err != nil {
		return nil, nil, "", err
	}
	if ps := checkModules(published, unpublished, version); len(ps) > 0 {
		msg := fmt.Sprintf("%d problem(s) keep the modules from being released at %s:", len(ps), version)
		for _, p := range ps {
			msg += "\n  " + p.String()
		}
		return nil, nil, "", errors.New(msg)
	}
	return published, unpublished, version, nil
}
