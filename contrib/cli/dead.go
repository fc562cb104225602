package sqlstreamscli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// progressMin is the smallest number of rows for which replay and discard
// draw a progress bar (on a terminal, in table output); batch is how many
// ids each call settles.
const (
	progressMin = 100
	deadBatch   = 100
)

func (c *CLI) deadCmd() *cobra.Command {
	replay := c.deadSettleCmd("replay", "replayed", (*sqlstreams.GroupAdmin).Replay, false)
	replay.Short = "Make dead letters due again, attempts reset"
	discard := c.deadSettleCmd("discard", "discarded", (*sqlstreams.GroupAdmin).Discard, true)
	discard.Short = "Resolve dead letters without processing them"
	return group("dead", "List, show, replay and discard dead letters", c.deadListCmd(), c.deadShowCmd(), replay, discard)
}

func (c *CLI) deadListCmd() *cobra.Command {
	var after int64
	var limit int
	list := &cobra.Command{Use: "list STREAM GROUP [--after ID] [--limit N]", Short: "List a group's dead letters, a page at a time", Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 1000 {
				return Usagef("--limit %d: list 1 to 1000 dead letters a page", limit)
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			g := s.Group(args[1]) // a missing group fails with ErrGroupNotFound, naming those there are
			dls, next, err := view.ReadDeadLetters(ctx, g, after, limit)
			if err != nil {
				return err
			}
			return c.writeDeadLetters(ctx, g, args[0], args[1], dls, next)
		})}
	list.Flags().Int64Var(&after, "after", 0, "list dead letters with ids above this one (the last id of the previous page)")
	list.Flags().IntVar(&limit, "limit", 50, "dead letters per page (1 to 1000)")
	return list
}

// writeDeadLetters prints a page of dead letters; next is where the
// following page starts, 0 on the last page.
func (c *CLI) writeDeadLetters(ctx context.Context, g *sqlstreams.GroupAdmin, stream, group string, dls []sqlstreams.DeadLetter, next int64) error {
	switch c.output {
	case "jsonl":
		for _, d := range dls {
			if err := c.WriteJSON(view.DeadLetterOf(d)); err != nil {
				return err
			}
		}
		return nil
	case "json":
		d, err := g.Describe(ctx)
		if err != nil {
			return err
		}
		return c.WriteJSON(view.DeadLetterPage{Stream: stream, Group: group, Dead: d.Dead, DeadLetters: view.DeadLettersOf(dls), NextAfter: next})
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tVERSION\tPARTITION\tKEY\tROUTING-KEY\tATTEMPTS\tFIRST-FAILED\tDIED-AT\tERROR")
	for _, d := range dls {
		fmt.Fprintf(tw, "%d\tv%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, d.SchemaVersion, d.Partition, dash(d.Key), dash(d.RoutingKey),
			d.Attempt, tableTime(d.FirstFailed), tableTime(d.DiedAt), cut(d.Error, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next > 0 {
		c.note("more may follow: add --after %d", next)
	}
	return nil
}

func (c *CLI) deadShowCmd() *cobra.Command {
	return &cobra.Command{Use: "show STREAM GROUP ID", Short: "Show one dead letter: headers, payload, the full error and its history", Args: cobra.ExactArgs(3),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			id, err := parseID(args[2])
			if err != nil {
				return err
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			g := s.Group(args[1]) // a missing group fails with ErrGroupNotFound, naming those there are
			d, err := g.DeadLetter(ctx, id)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(view.DeadLetterOf(d))
			}
			return writeDead(c.opts.Stdout, args[0], args[1], d)
		})}
}

// settleIDs is a GroupAdmin method that resolves dead letters by id:
// Replay or Discard.
type settleIDs func(*sqlstreams.GroupAdmin, context.Context, ...int64) (int64, error)

// deadSettleCmd is dead replay or dead discard: verb names the command,
// past the count in its output; a destructive one asks for --yes.
func (c *CLI) deadSettleCmd(verb, past string, one settleIDs, destructive bool) *cobra.Command {
	var all, yes bool
	use := verb + " STREAM GROUP (ID... | --all)"
	if destructive {
		use += " --yes"
	}
	cmd := &cobra.Command{Use: use, Args: cobra.MinimumNArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if all == (len(args) > 2) {
				return Usagef("dead %s takes dead letter ids or --all, not both and not neither", verb)
			}
			if destructive && !yes {
				return Usagef("dead %s resolves dead letters without processing them; add --yes to confirm", verb)
			}
			var ids []int64
			for _, a := range args[2:] {
				id, err := parseID(a)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			g := s.Group(args[1]) // a missing group fails with ErrGroupNotFound, naming those there are
			var n int64
			if all {
				n, err = c.settleAll(ctx, g, verb, one)
			} else {
				n, err = one(g, ctx, ids...)
			}
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(map[string]any{"stream": args[0], "group": args[1], past: n})
			}
			tw := c.table()
			fmt.Fprintf(tw, "%s\n%d\n", strings.ToUpper(past), n)
			return tw.Flush()
		})}
	cmd.Flags().BoolVar(&all, "all", false, "every dead letter of the group")
	if destructive {
		cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	}
	return cmd
}

// settleAll replays or discards every dead letter a page at a time, so that
// a terminal shows progress on a large backlog, and each call stays bounded.
// Paging by id means a row that dies again while this runs is not taken
// twice.
func (c *CLI) settleAll(ctx context.Context, g *sqlstreams.GroupAdmin, verb string, one settleIDs) (int64, error) {
	d, err := g.Describe(ctx)
	if err != nil {
		return 0, err
	}
	bar := c.progress(verb, d.Dead)
	var done, after int64
	for {
		dls, err := g.DeadLetters(ctx, after, deadBatch)
		if err != nil {
			bar.end()
			return done, err
		}
		if len(dls) == 0 {
			bar.end()
			return done, nil
		}
		ids := make([]int64, len(dls))
		for i, dl := range dls {
			ids[i] = dl.ID
		}
		n, err := one(g, ctx, ids...)
		done += n
		bar.set(done)
		if err != nil {
			bar.end()
			return done, err
		}
		after = ids[len(ids)-1]
	}
}

type progressBar struct {
	w     io.Writer
	verb  string
	total int64
}

// progress returns a bar drawn on stderr when it is a terminal, the output
// is a table and the work is large enough to wait for; otherwise a bar that
// draws nothing.
func (c *CLI) progress(verb string, total int64) *progressBar {
	if c.JSON() || total < progressMin || !c.opts.Terminal(c.opts.Stderr) {
		return &progressBar{}
	}
	b := &progressBar{w: c.opts.Stderr, verb: verb, total: total}
	b.set(0)
	return b
}

func (b *progressBar) set(n int64) {
	if b.w == nil {
		return
	}
	const width = 30
	filled := int(min(n, b.total) * width / b.total)
	fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d", b.verb, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), n, b.total)
}

func (b *progressBar) end() {
	if b.w != nil {
		fmt.Fprintln(b.w)
	}
}

func writeDead(w io.Writer, stream, group string, d sqlstreams.DeadLetter) error {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %d\nstream: %s\ngroup: %s\nversion: v%d\npartition: %d\nkey: %s\nrouting key: %s\n", d.ID, stream, group,
		d.SchemaVersion, d.Partition, dash(d.Key), dash(d.RoutingKey))
	fmt.Fprintf(&b, "produced at: %s\nattempts: %d\nfirst failed: %s\ndied at: %s\nholder: %s\n", tableTime(d.ProducedAt), d.Attempt,
		tableTime(d.FirstFailed), tableTime(d.DiedAt), dash(d.Holder))
	b.WriteString("headers:")
	if len(d.Headers) == 0 {
		b.WriteString(" -")
	}
	b.WriteString("\n")
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, d.Headers[k])
	}
	b.WriteString("error:\n")
	b.WriteString(indent(d.Error))
	if len(d.History) > 0 {
		b.WriteString("history:\n")
		for _, f := range d.History {
			fmt.Fprintf(&b, "  attempt %d at %s by %s:\n", f.Attempt, tableTime(f.At), dash(f.Holder))
			b.WriteString(indent(indent(f.Error)))
		}
	}
	b.WriteString("payload:\n")
	b.WriteString(indent(view.PrettyJSON(d.Payload)))
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}
