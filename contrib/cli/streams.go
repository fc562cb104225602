package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// raw returns the name-only handle on a stream.
func (c *CLI) raw(ctx context.Context, name string) (*sqlstreams.Client, *sqlstreams.Stream[sqlstreams.RawPayload], error) {
	client, err := c.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return client, client.Stream[sqlstreams.RawPayload](name), nil
}

func (c *CLI) writeStreams(streams []sqlstreams.StreamInfo) error {
	if c.JSON() {
		out := view.StreamList{Streams: []view.Stream{}}
		for _, s := range streams {
			out.Streams = append(out.Streams, view.StreamOf(s))
		}
		return c.WriteJSON(out)
	}
	tw := c.table()
	fmt.Fprintln(tw, "NAME\tPARTITIONS\tCOMPACTED\tMAX-AGE\tMAX-ROWS\tHARD\tCREATED")
	for _, s := range streams {
		age, rows := "-", "-"
		if s.Retention.MaxAge > 0 {
			age = s.Retention.MaxAge.String()
		}
		if s.Retention.MaxRows > 0 {
			rows = fmt.Sprint(s.Retention.MaxRows)
		}
		fmt.Fprintf(tw, "%s\t%d\t%t\t%s\t%s\t%t\t%s\n", s.Name, s.Partitions, s.Compacted, age, rows, s.Retention.Hard, tableTime(s.CreatedAt))
	}
	return tw.Flush()
}

func group(use, short string, cmds ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	g.AddCommand(cmds...)
	return g
}

func (c *CLI) streamsCmd() *cobra.Command {
	return group("streams", "List, create, describe, alter, rename and destroy streams", c.streamsListCmd(), c.streamsCreateCmd(),
		c.streamsDescribeCmd(), c.streamsAlterCmd(), c.streamsRenameCmd(), c.streamsDestroyCmd())
}

func (c *CLI) streamsListCmd() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List the streams", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			streams, err := client.Streams(ctx)
			if err != nil {
				return err
			}
			return c.writeStreams(streams)
		})}
}

func (c *CLI) streamsCreateCmd() *cobra.Command {
	var opts sqlstreams.StreamOptions
	var ifNotExists bool
	create := &cobra.Command{Use: "create NAME [--if-not-exists]", Short: "Create a stream", Args: cobra.ExactArgs(1),
		Long: `create makes a stream. A stream that exists is an error, unless --if-not-exists: then it is left
as it is (its options are not compared with the flags, as kafka-topics --if-not-exists does) and
printed.`,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			info, err := s.Create(ctx, &opts)
			if ifNotExists && errors.Is(err, sqlstreams.ErrStreamExists) {
				if info, err = s.Get(ctx); err == nil {
					c.note("stream %s exists; left as it is (--if-not-exists)", args[0])
				}
			}
			if err != nil {
				return err
			}
			return c.writeStreams([]sqlstreams.StreamInfo{info})
		})}
	create.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed, changing nothing, when the stream exists")
	create.Flags().IntVar(&opts.Partitions, "partitions", 0, "number of partitions (default 1; fixed for the stream's life)")
	create.Flags().BoolVar(&opts.Compacted, "compacted", false, "keep the current value per key")
	create.Flags().DurationVar(&opts.Retention.MaxAge, "max-age", 0, "retention: remove resolved rows older than this")
	create.Flags().Int64Var(&opts.Retention.MaxRows, "max-rows", 0, "retention: keep at most this many rows per partition")
	create.Flags().BoolVar(&opts.Retention.Hard, "hard", false, "retention also removes rows groups have not read")
	return create
}

func (c *CLI) streamsDescribeCmd() *cobra.Command {
	return &cobra.Command{Use: "describe NAME", Short: "Show a stream's configuration, groups and health", Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			client, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			info, err := s.Get(ctx)
			if err != nil {
				return err
			}
			groups, err := s.Groups(ctx)
			if err != nil {
				return err
			}
			h, err := s.Health(ctx)
			if err != nil {
				return err
			}
			members, err := view.ReadMembers(ctx, client)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(view.DescribeStream(info, groups, h, members))
			}
			if err := c.writeStreams([]sqlstreams.StreamInfo{info}); err != nil {
				return err
			}
			fmt.Fprintln(c.opts.Stdout)
			if err := c.writeGroups(view.GroupsOf(info.Name, groups, h, members), false); err != nil {
				return err
			}
			fmt.Fprintln(c.opts.Stdout)
			return c.writeHealth(h)
		})}
}

func (c *CLI) streamsRenameCmd() *cobra.Command {
	return &cobra.Command{Use: "rename OLD NEW", Short: "Rename a stream (its id, rows and groups stay)", Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			if err := s.Rename(ctx, args[1]); err != nil {
				return err
			}
			return c.done(map[string]any{"renamed": args[0], "to": args[1]}, "renamed stream %s to %s", args[0], args[1])
		})}
}

func (c *CLI) streamsDestroyCmd() *cobra.Command {
	var yes, force bool
	destroy := &cobra.Command{Use: "destroy NAME --yes [--force]", Short: "Destroy a stream with its log, groups and dead letters; refused while groups have deliveries left unless --force",
		Long: `destroy removes a stream with its rows, groups, cursors, dead letters and schema revisions, for good,
and prints what it removed. It is refused (exit 3) while any group has unread, leased, delayed or dead
deliveries (health shows them), unless --force.`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if !yes {
				return Usagef("streams destroy removes stream %q with its rows, groups and dead letters for good; add --yes to confirm", args[0])
			}
			return c.destroyStream(ctx, args[0], force)
		})}
	destroy.Flags().BoolVar(&yes, "yes", false, "confirm")
	destroy.Flags().BoolVar(&force, "force", false, "destroy even though groups have deliveries left")
	return destroy
}

// done reports a command that changes something and returns no rows.
func (c *CLI) done(doc any, format string, args ...any) error {
	if c.JSON() {
		return c.WriteJSON(doc)
	}
	_, err := fmt.Fprintf(c.opts.Stdout, format+"\n", args...)
	return err
}

// writeHealth prints the health read: a row per version and group with its
// backlog, then one verdict line per version. The verdicts stand apart, one
// per version, because a version's verdict is long and not a group's; the
// cursor distance (high-water minus cursor, over every version and key) is
// left to groups describe and the JSON, where it sits beside LAG.
func (c *CLI) writeHealth(h sqlstreams.Health) error {
	fmt.Fprintf(c.opts.Stdout, "stream %s (high-water id %d)\n", h.Stream, h.HighWater)
	tw := c.table()
	fmt.Fprintln(tw, "VERSION\tROWS\tHEADS\tGROUP\tUNREAD\tLEASED\tDELAYED\tDEAD")
	for _, vh := range h.Versions {
		if len(vh.Groups) == 0 {
			fmt.Fprintf(tw, "v%d\t%d\t%d\t-\t-\t-\t-\t-\n", vh.Version, vh.Rows, vh.Heads)
		}
		for i, g := range vh.Groups {
			v, rows, heads := fmt.Sprintf("v%d", vh.Version), fmt.Sprint(vh.Rows), fmt.Sprint(vh.Heads)
			if i > 0 {
				v, rows, heads = "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", v, rows, heads, g.Group, g.Unread, g.Leased, g.Delayed, g.Dead)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(h.Versions) > 0 {
		fmt.Fprintln(c.opts.Stdout)
	}
	for _, vh := range h.Versions {
		verdict := "retirable"
		if !vh.Retirable {
			verdict = "not retirable: " + vh.Verdict()
		}
		for _, n := range vh.Notes {
			verdict += "; " + n.Text
		}
		if _, err := fmt.Fprintf(c.opts.Stdout, "v%d: %s\n", vh.Version, verdict); err != nil {
			return err
		}
	}
	return nil
}

func (c *CLI) healthCmd() *cobra.Command {
	var retirable string
	cmd := &cobra.Command{Use: "health STREAM [--retirable vN]", Short: "Show a stream's health per version; --retirable gates on one version",
		Long: `health prints, per schema version, the rows, compaction heads and each group's backlog, then one
line per version with its retirement verdict. With --retirable vN it exits 3 unless version N is retirable, printing the
reasons: the CI/CD gate before stopping a version's consumers. A version the stream has never had
(no rows, heads or group at it, no registered schema) fails the gate too, listing the versions it
has; one retired already (rows gone, groups deleted, schema registered) passes.`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			version := 0
			if retirable != "" {
				v, err := parseVersion(retirable)
				if err != nil {
					return err
				}
				version = v
			}
			client, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			h, err := s.Health(ctx)
			if err != nil {
				return err
			}
			var gate *retirableJSON
			if version > 0 {
				if gate, err = retirementGate(ctx, client, h, version); err != nil {
					return err
				}
			}
			if c.JSON() {
				if err := c.WriteJSON(struct {
					view.Health
					Retirable *retirableJSON `json:"retirable,omitempty"`
				}{view.HealthOf(h), gate}); err != nil {
					return err
				}
			} else if err := c.writeHealth(h); err != nil {
				return err
			}
			if gate == nil {
				return nil
			}
			return c.writeGate(h, gate)
		})}
	cmd.Flags().StringVar(&retirable, "retirable", "", "exit 3 unless this version (2 or v2) is retirable")
	return cmd
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf("v%d", v)
	}
	return dash(strings.Join(s, ","))
}

// writeGroups prints groups as a table, with a STREAM column when they may
// come from several streams.
func (c *CLI) writeGroups(groups []view.Group, withStream bool) error {
	tw := c.table()
	stream := func(g view.Group) string { return g.Stream + "\t" }
	head := "STREAM\t"
	if !withStream {
		stream, head = func(view.Group) string { return "" }, ""
	}
	fmt.Fprintln(tw, head+"GROUP\tREADS\tBINDINGS\tCONVERTS-FROM\tUNREAD\tUNRESOLVED\tDEAD")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%d\t%d\t%d\n", stream(g), g.Name, g.Reads, dash(strings.Join(g.Bindings, ",")), joinInts(g.ConvertsFrom), g.Unread, g.Unresolved, g.Dead)
	}
	return tw.Flush()
}
