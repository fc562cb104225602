package main

import (
	"fmt"
	"path"
)

// problem is one reason the working tree cannot be released as it is.
type problem struct {
	File string
	Line int
	Why  string
}

func (p problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Why)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Why)
}

// checkModules lists what would keep a user from resolving the published
// modules at version: a replace or exclude directive (Go ignores both in a
// dependency, and refuses `go install m@v` of a module that has one), a
// sibling required at another version than the release (v0.0.0 and
// pseudo-versions included), a required sibling that is never published,
// and a module path that does not match its directory.
func checkModules(published, unpublished []mod, version string) []problem {
	names := map[string]bool{}
	for _, m := range published {
		names[m.Path] = true
	}
	var out []problem
	for _, m := range published {
		file := path.Join(m.Dir, "go.mod")
		if want := prefix + "/" + m.Dir; m.Path != want {
			out = append(out, problem{file, 0, fmt.Sprintf("module path %s: a module in %s must be %s, or its tags cannot be found", m.Path, m.Dir, want)})
		}
		for _, r := range m.File.Replace {
			out = append(out, problem{file, r.Syntax.Start.Line, fmt.Sprintf("replace %s: published modules carry no replace directive (go.work builds the repository)", r.Old.Path)})
		}
		for _, x := range m.File.Exclude {
			out = append(out, problem{file, x.Syntax.Start.Line, fmt.Sprintf("exclude %s: published modules carry no exclude directive", x.Mod.Path)})
		}
		for _, r := range m.File.Require {
			if !sibling(r.Mod.Path) {
				continue
			}
			switch {
			case !names[r.Mod.Path]:
				out = append(out, problem{file, r.Syntax.Start.Line, fmt.Sprintf("requires %s, which is never published: move what needs it to a test-only module under .tests", r.Mod.Path)})
			case r.Mod.Version != version:
				out = append(out, problem{file, r.Syntax.Start.Line, fmt.Sprintf("requires %s %s: every sibling is required at the release version %s (run make release VERSION=%s)", r.Mod.Path, r.Mod.Version, version, version)})
			}
		}
	}
	return out
}
