package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func (c *CLI) groupsCmd() *cobra.Command {
	pause, resume := c.groupsPauseCmds()
	return group("groups", "List, create, describe, reset, pause, resume and delete consumer groups", c.groupsListCmd(), c.groupsCreateCmd(),
		c.groupsDescribeCmd(), c.groupsResetCmd(), pause, resume, c.groupsDeleteCmd())
}

func (c *CLI) groupsListCmd() *cobra.Command {
	return &cobra.Command{Use: "list [STREAM]", Short: "List consumer groups with their backlog: of every stream, or of STREAM",
		Args: cobra.MaximumNArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			rows, err := c.listGroups(ctx, args)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(view.GroupList{Groups: rows})
			}
			return c.writeGroups(rows, true)
		})}
}

func (c *CLI) groupsDescribeCmd() *cobra.Command {
	return &cobra.Command{Use: "describe STREAM GROUP", Short: "Show a group's cursors, lag, lease holders and backlog per version", Args: cobra.ExactArgs(2),
		Long: `describe shows what a group reads, then per partition: NEXT-ID, the next id the group reads there
(its cursor), HIGH-WATER, the greatest id the partition has had, LAG, the rows past the cursor the
group reads (its versions and bindings: work still to do), and DISTANCE, HIGH-WATER minus the last
id read (every row past the cursor, at any version or key, so it may be larger than LAG). Then the
clients holding its leases, and its backlog per version with that version's verdict.`,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			client, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			d, err := s.Group(args[1]).Describe(ctx)
			if err != nil {
				return err
			}
			h, err := s.Health(ctx)
			if err != nil {
				return err
			}
			return c.writeDescription(d, h, view.Heartbeats(client))
		})}
}

// resetFlags are the flags of groups reset.
type resetFlags struct {
	earliest, latest bool
	id, shift        int64
	at               string
	partitions       []int
	execute          bool
}

// target is where the flags move the cursors: exactly one of the --to-*
// and --shift-by flags must be given.
func (r *resetFlags) target(cmd *cobra.Command) (sqlstreams.ResetTo, error) {
	var to []sqlstreams.ResetTo
	if r.earliest {
		to = append(to, sqlstreams.ResetToEarliest())
	}
	if r.latest {
		to = append(to, sqlstreams.ResetToLatest())
	}
	if cmd.Flags().Changed("to-id") {
		to = append(to, sqlstreams.ResetToID(r.id))
	}
	if cmd.Flags().Changed("shift-by") {
		to = append(to, sqlstreams.ResetShift(r.shift))
	}
	if r.at != "" {
		t, err := time.Parse(time.RFC3339Nano, r.at)
		if err != nil {
			return sqlstreams.ResetTo{}, Usagef("--to-time %q: write an RFC 3339 time such as 2026-12-01T09:00:00Z", r.at)
		}
		to = append(to, sqlstreams.ResetToTime(t))
	}
	if len(to) != 1 {
		return sqlstreams.ResetTo{}, Usagef("groups reset takes exactly one of --to-earliest, --to-latest, --to-id, --to-time, --shift-by")
	}
	return to[0], nil
}

func (c *CLI) groupsResetCmd() *cobra.Command {
	var reset resetFlags
	cmd := &cobra.Command{Use: "reset STREAM GROUP (--to-earliest | --to-latest | --to-id N | --to-time T | --shift-by N) [--execute]",
		Short: "Move a group's cursors; prints the plan unless --execute",
		Long: `reset moves a group's cursors, as kafka-consumer-groups --reset-offsets does. Without --execute it
only prints the plan (a dry run). Leased, delayed and dead deliveries keep their state.

The plan shows each partition's cursor as the next id the group reads there, before (NEXT-ID) and
after (NEW-NEXT-ID), as groups describe shows it: ids are unique across partitions, so the next row
read in a partition is the first one there with an id at or above it.`,
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			to, err := reset.target(cmd)
			if err != nil {
				return err
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			changes, err := s.Group(args[1]).ResetCursors(ctx, sqlstreams.ResetOptions{To: to, Partitions: reset.partitions, DryRun: !reset.execute})
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(struct {
					Stream   string              `json:"stream"`
					Group    string              `json:"group"`
					Executed bool                `json:"executed"`
					Changes  []view.CursorChange `json:"changes"`
				}{args[0], args[1], reset.execute, view.CursorChangesOf(changes)})
			}
			tw := c.table()
			fmt.Fprintln(tw, "PARTITION\tNEXT-ID\tNEW-NEXT-ID")
			for _, ch := range changes {
				fmt.Fprintf(tw, "%d\t%d\t%d\n", ch.Partition, ch.From+1, ch.To+1)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if !reset.execute {
				c.note("dry run: nothing changed; add --execute to apply this plan")
			}
			return nil
		})}
	rf := cmd.Flags()
	rf.BoolVar(&reset.earliest, "to-earliest", false, "read again from the first retained row")
	rf.BoolVar(&reset.latest, "to-latest", false, "skip everything in the log now")
	rf.Int64Var(&reset.id, "to-id", 0, "make this row id the next one read")
	rf.StringVar(&reset.at, "to-time", "", "make the first row produced at or after this RFC 3339 time the next one read")
	rf.Int64Var(&reset.shift, "shift-by", 0, "move by N rows: forward (skip) for N > 0, back (read again) for N < 0")
	rf.IntSliceVar(&reset.partitions, "partition", nil, "partition to reset (repeatable; default all)")
	rf.BoolVar(&reset.execute, "execute", false, "apply the plan (default: dry run)")
	return cmd
}

func (c *CLI) groupsDeleteCmd() *cobra.Command {
	var force, yes bool
	del := &cobra.Command{Use: "delete STREAM GROUP --yes [--force]", Short: "Delete a group; refused while it has anything left unless --force",
		Long: `delete removes a group with its cursors, unresolved and dead deliveries and reader schemas. It is
refused (exit 3) while the group has unread, leased, delayed or dead deliveries at any version it
reads (health --retirable shows them), unless --force.`,
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if !yes {
				return Usagef("groups delete removes group %q of %q with its cursors and dead letters; add --yes to confirm", args[1], args[0])
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			if !force {
				if _, err := s.Group(args[1]).Describe(ctx); err != nil {
					return err
				}
				h, err := s.Health(ctx)
				if err != nil {
					return err
				}
				if left := groupBacklog(h, args[1]); len(left) > 0 {
					return CheckFailedf("sqlstreams: group %q of %q is not retirable, so it was not deleted: %s; let it finish (health --retirable), or add --force to delete it anyway",
						args[1], args[0], strings.Join(left, "; "))
				}
			}
			if err := s.Group(args[1]).Delete(ctx); err != nil {
				return err
			}
			return c.done(map[string]any{"stream": args[0], "deleted_group": args[1]}, "deleted group %s of %s", args[1], args[0])
		})}
	del.Flags().BoolVar(&yes, "yes", false, "confirm")
	del.Flags().BoolVar(&force, "force", false, "delete even though the group has deliveries left")
	return del
}

func (c *CLI) writeDescription(d sqlstreams.GroupDescription, h sqlstreams.Health, heartbeats bool) error {
	out := view.DescribeGroup(d, h, heartbeats)
	if c.JSON() {
		return c.WriteJSON(out)
	}
	tw := c.table()
	fmt.Fprintf(tw, "group:\t%s\n", out.Name)
	fmt.Fprintf(tw, "stream:\t%s\n", out.Stream)
	fmt.Fprintf(tw, "reads:\t%s\n", out.Reads)
	fmt.Fprintf(tw, "converts from:\t%s\n", joinInts(out.ConvertsFrom))
	fmt.Fprintf(tw, "bindings:\t%s\n", dash(strings.Join(out.Bindings, ",")))
	fmt.Fprintf(tw, "start:\t%s\n", out.Start)
	fmt.Fprintf(tw, "created:\t%s\n", tableTime(d.CreatedAt))
	if !d.PausedAt.IsZero() {
		fmt.Fprintf(tw, "paused:\t%s (groups resume %s %s lets its members claim again)\n", tableTime(d.PausedAt), out.Stream, out.Name)
	}
	fmt.Fprintf(tw, "unresolved:\t%d leased, %d delayed, %d dead\n", d.Leased, d.Delayed, d.Dead)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.opts.Stdout)
	tw = c.table()
	fmt.Fprintln(tw, "PARTITION\tNEXT-ID\tHIGH-WATER\tLAG\tDISTANCE")
	for _, p := range out.Partitions {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\n", p.Partition, p.NextID, p.HighWater, p.Lag, p.Distance)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.opts.Stdout)
	tw = c.table()
	fmt.Fprintln(tw, "HOLDER\tLEASES\tUNTIL")
	for _, hd := range d.Holders {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", hd.Holder, hd.Leases, tableTime(hd.Until))
	}
	if len(d.Holders) == 0 {
		fmt.Fprintln(tw, "-\t0\t-")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.opts.Stdout)
	if err := c.writeMembers(d.Members, heartbeats); err != nil {
		return err
	}
	fmt.Fprintln(c.opts.Stdout)
	tw = c.table()
	fmt.Fprintln(tw, "VERSION\tUNREAD\tLEASED\tDELAYED\tDEAD\tVERDICT")
	for _, v := range out.Versions {
		fmt.Fprintf(tw, "v%d\t%d\t%d\t%d\t%d\t%s\n", v.Version, v.Unread, v.Leased, v.Delayed, v.Dead, v.Verdict)
	}
	return tw.Flush()
}

// listGroups reads the groups of the stream named in args, or of every
// stream when args is empty, with their backlog from each stream's health
// read. A stream destroyed while every stream is listed is left out.
func (c *CLI) listGroups(ctx context.Context, args []string) ([]view.Group, error) {
	client, err := c.Client(ctx)
	if err != nil {
		return nil, err
	}
	names := args
	if len(args) == 0 {
		streams, err := client.Streams(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range streams {
			names = append(names, s.Name)
		}
	}
	members, err := view.ReadMembers(ctx, client)
	if err != nil {
		return nil, err
	}
	rows := []view.Group{}
	for _, name := range names {
		s := client.Stream[sqlstreams.RawPayload](name)
		groups, err := s.Groups(ctx)
		if err == nil && len(groups) > 0 {
			var h sqlstreams.Health
			if h, err = s.Health(ctx); err == nil {
				rows = append(rows, view.GroupsOf(name, groups, h, members)...)
			}
		}
		if err != nil && (len(args) > 0 || !errors.Is(err, sqlstreams.ErrStreamNotFound)) {
			return nil, err
		}
	}
	return rows, nil
}

// writeMembers prints the clients that ran consumers of a group, with how
// long ago each was seen: a live member that holds no lease is an idle,
// healthy consumer, not a dead one.
func (c *CLI) writeMembers(ms []sqlstreams.MemberInfo, heartbeats bool) error {
	tw := c.table()
	fmt.Fprintln(tw, "MEMBER\tSTATE\tHOST\tPID\tVERSION\tLAST-SEEN")
	now := time.Now()
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", dash(m.Identity), m.State, dash(m.Host), m.PID, dash(m.LibraryVersion), view.Ago(m.LastSeen, now))
	}
	switch {
	case !heartbeats:
		fmt.Fprintln(tw, "-\t(the driver records no heartbeats)\t-\t-\t-\t-")
	case len(ms) == 0:
		fmt.Fprintln(tw, "-\tnone\t-\t-\t-\t-")
	}
	return tw.Flush()
}
