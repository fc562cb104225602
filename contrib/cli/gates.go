package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// The two gates that refuse to pass by mistake (issue 29): health
// --retirable fails for a version the stream never had, and streams destroy
// is refused while groups have deliveries left, as groups delete is.

type retirableJSON struct {
	Version int `json:"version"`
	// Known is false for a version the stream has never had (a typo).
	Known     bool     `json:"known"`
	Retirable bool     `json:"retirable"`
	Reasons   []string `json:"reasons"`
}

// revisions lists the stream's registered schema revisions at every version;
// none from a driver without a registry.
func revisions(ctx context.Context, client *sqlstreams.Client, stream string) ([]sqlstreams.Revision, error) {
	revs, err := client.Registry().Revisions(ctx, stream, 0)
	if errors.Is(err, sqlstreams.ErrNoRegistry) {
		return nil, nil
	}
	return revs, err
}

// hadVersions lists, ascending, the versions the stream has had: those in
// the health read (rows or compaction heads in the log, a group bound to the
// version or converting from it) and those with a registered schema
// revision, which outlive retention and group deletion (docs/decisions.md).
func hadVersions(h sqlstreams.Health, revs []sqlstreams.Revision) []int {
	var out []int
	for _, vh := range h.Versions {
		out = append(out, vh.Version)
	}
	for _, r := range revs {
		out = append(out, r.Version)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// retirementGate judges version for health --retirable. A version the stream has
// never had fails the gate: a typo must not turn a CI gate green.
func retirementGate(ctx context.Context, client *sqlstreams.Client, h sqlstreams.Health, version int) (*retirableJSON, error) {
	if vh, ok := h.Version(version); ok {
		gate := &retirableJSON{Version: version, Known: true, Retirable: vh.Retirable, Reasons: vh.Reasons}
		if gate.Reasons == nil {
			gate.Reasons = []string{}
		}
		return gate, nil
	}
	revs, err := revisions(ctx, client, h.Stream)
	if err != nil {
		return nil, err
	}
	had := hadVersions(h, revs)
	if slices.Contains(had, version) { // retired: nothing left at it but its schema
		return &retirableJSON{Version: version, Known: true, Retirable: true, Reasons: []string{}}, nil
	}
	return &retirableJSON{Version: version, Reasons: []string{fmt.Sprintf(
		"stream %s has never had version %d: no rows, heads or group at it and no registered schema; it has %s",
		h.Stream, version, versionList(had))}}, nil
}

// versionList writes versions as "v1,v2", or "none".
func versionList(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	return joinInts(vs)
}

// writeGate prints the --retirable verdict under the health table, and
// returns the failed check when it did not pass.
func (c *CLI) writeGate(h sqlstreams.Health, gate *retirableJSON) error {
	if !c.JSON() {
		fmt.Fprintln(c.opts.Stdout)
		switch {
		case !gate.Known:
			fmt.Fprintf(c.opts.Stdout, "v%d is not a version of %s:\n  - %s\n", gate.Version, h.Stream, gate.Reasons[0])
		case gate.Retirable:
			if _, ok := h.Version(gate.Version); !ok {
				fmt.Fprintf(c.opts.Stdout, "v%d is retirable (nothing left at it but its registered schema)\n", gate.Version)
			} else {
				fmt.Fprintf(c.opts.Stdout, "v%d is retirable\n", gate.Version)
			}
		default:
			fmt.Fprintf(c.opts.Stdout, "v%d is not retirable:\n", gate.Version)
			for _, r := range gate.Reasons {
				fmt.Fprintf(c.opts.Stdout, "  - %s\n", r)
			}
		}
	}
	switch {
	case !gate.Known:
		return CheckFailedf("sqlstreams: %s (check the version; health %s lists them)", gate.Reasons[0], h.Stream)
	case !gate.Retirable:
		return CheckFailedf("sqlstreams: version %d of stream %q is not retirable: %s", gate.Version, h.Stream, strings.Join(gate.Reasons, "; "))
	}
	return nil
}

// groupBacklog lists what a group still has to resolve at every version it
// reads (what blocks deleting it), or, for group "", what every group has:
// the deliveries destroying the stream would lose. Compaction heads, a
// version-wide blocker, are not a group's backlog.
func groupBacklog(h sqlstreams.Health, group string) []string {
	var out []string
	for _, vh := range h.Versions {
		for _, r := range vh.Blockers {
			if r.Group != "" && (group == "" || r.Group == group) {
				out = append(out, fmt.Sprintf("v%d: %s", vh.Version, r.Text))
			}
		}
	}
	return out
}

type destroyedJSON struct {
	Destroyed       string   `json:"destroyed"`
	Rows            int64    `json:"rows"`
	Heads           int64    `json:"heads"`
	Groups          []string `json:"groups"`
	Unread          int64    `json:"unread"`
	Leased          int64    `json:"leased"`
	Delayed         int64    `json:"delayed"`
	Dead            int64    `json:"dead"`
	SchemaRevisions int      `json:"schema_revisions"`
	// Lost lists the deliveries --force gave up, per version and group.
	Lost []string `json:"lost"`
}

// destroyStream destroys the stream unless a group has deliveries left
// (force overrides), and reports what it removed, as counted just before.
func (c *CLI) destroyStream(ctx context.Context, name string, force bool) error {
	client, s, err := c.raw(ctx, name)
	if err != nil {
		return err
	}
	h, err := s.Health(ctx)
	if err != nil {
		return err
	}
	lost := groupBacklog(h, "")
	if len(lost) > 0 && !force {
		return CheckFailedf("sqlstreams: stream %q was not destroyed: its groups have deliveries left that would be lost: %s; let the groups finish (health %s shows what is left), or add --force to destroy it anyway",
			name, strings.Join(lost, "; "), name)
	}
	groups, err := s.Groups(ctx)
	if err != nil {
		return err
	}
	revs, err := revisions(ctx, client, name)
	if err != nil {
		return err
	}
	out := destroyedJSON{Destroyed: name, Groups: []string{}, SchemaRevisions: len(revs), Lost: lost}
	if out.Lost == nil {
		out.Lost = []string{}
	}
	for _, g := range groups {
		out.Groups = append(out.Groups, g.Name)
	}
	for _, vh := range h.Versions {
		out.Rows, out.Heads = out.Rows+vh.Rows, out.Heads+vh.Heads
		for _, g := range vh.Groups {
			out.Unread, out.Leased, out.Delayed, out.Dead = out.Unread+g.Unread, out.Leased+g.Leased, out.Delayed+g.Delayed, out.Dead+g.Dead
		}
	}
	if err := s.Destroy(ctx); err != nil {
		return err
	}
	return c.writeDestroyed(out)
}

func (c *CLI) writeDestroyed(out destroyedJSON) error {
	if c.JSON() {
		return c.WriteJSON(out)
	}
	fmt.Fprintf(c.opts.Stdout, "destroyed stream %s\n", out.Destroyed)
	tw := c.table()
	fmt.Fprintln(tw, "ROWS\tHEADS\tGROUPS\tUNREAD\tLEASED\tDELAYED\tDEAD\tSCHEMA-REVISIONS")
	fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\n", out.Rows, out.Heads, dash(strings.Join(out.Groups, ",")),
		out.Unread, out.Leased, out.Delayed, out.Dead, out.SchemaRevisions)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Lost) > 0 {
		fmt.Fprintln(c.opts.Stdout, "lost with it (--force):")
		for _, l := range out.Lost {
			fmt.Fprintf(c.opts.Stdout, "  - %s\n", l)
		}
	}
	return nil
}
