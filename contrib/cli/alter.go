package sqlstreamscli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// alterFlags are the settings streams alter may change; a retention flag
// changes only its own limit, as kafka-configs --alter changes only the
// configs it names.
type alterFlags struct {
	partitions int
	compacted  bool
	maxAge     time.Duration
	maxRows    int64
	hard       bool
	execute    bool
}

func (c *CLI) streamsAlterCmd() *cobra.Command {
	var f alterFlags
	cmd := &cobra.Command{Use: "alter NAME [--partitions N] [--compacted=true|false] [--max-age D] [--max-rows N] [--hard=true|false] [--execute]",
		Short: "Change a stream's partitions, compaction or retention; prints the plan unless --execute",
		Long: `alter changes a stream for every process using it. Without --execute it only prints the plan: each
setting before and after, and what the change means for the rows already in the log (a dry run, as
groups reset). Partitions can only be added; keys move to their new partition for messages produced
from then on. Compaction switched on stops delivering every key's older rows and rows without a key;
retention limits apply at the next maintenance run. A flag that is not given keeps its setting.`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return c.alterStream(ctx, cmd, args[0], f)
		})}
	fl := cmd.Flags()
	fl.IntVar(&f.partitions, "partitions", 0, "the new number of partitions (only more than now)")
	fl.BoolVar(&f.compacted, "compacted", false, "switch compaction on (--compacted) or off (--compacted=false)")
	fl.DurationVar(&f.maxAge, "max-age", 0, "retention: remove resolved rows older than this (0 for no limit)")
	fl.Int64Var(&f.maxRows, "max-rows", 0, "retention: keep at most this many rows per partition (0 for no limit)")
	fl.BoolVar(&f.hard, "hard", false, "retention also removes rows groups have not read (--hard=false to stop)")
	fl.BoolVar(&f.execute, "execute", false, "apply the change (without it, only the plan is printed)")
	return cmd
}

// changes builds the StreamChanges the flags given on cmd ask for, on top
// of the stored settings.
func (f alterFlags) changes(cmd *cobra.Command, stored sqlstreams.StreamInfo) (sqlstreams.StreamChanges, error) {
	var ch sqlstreams.StreamChanges
	set := cmd.Flags().Changed
	if set("partitions") {
		if f.partitions < 1 {
			return ch, Usagef("--partitions must be 1 or more (the stream has %d)", stored.Partitions)
		}
		ch.Partitions = f.partitions
	}
	if set("compacted") {
		ch.Compacted = &f.compacted
	}
	if set("max-age") || set("max-rows") || set("hard") {
		r := stored.Retention
		if set("max-age") {
			r.MaxAge = f.maxAge
		}
		if set("max-rows") {
			r.MaxRows = f.maxRows
		}
		if set("hard") {
			r.Hard = f.hard
		}
		ch.Retention = &r
	}
	if ch.Partitions == 0 && ch.Compacted == nil && ch.Retention == nil {
		return ch, Usagef("streams alter changes nothing without --partitions, --compacted, --max-age, --max-rows or --hard")
	}
	return ch, nil
}

func (c *CLI) alterStream(ctx context.Context, cmd *cobra.Command, name string, f alterFlags) error {
	_, s, err := c.raw(ctx, name)
	if err != nil {
		return err
	}
	stored, err := s.Get(ctx)
	if err != nil {
		return err
	}
	ch, err := f.changes(cmd, stored)
	if err != nil {
		return err
	}
	plan, err := view.PlanAlter(stored, ch)
	if err != nil {
		return err
	}
	if f.execute {
		if _, err := s.Alter(ctx, ch); err != nil {
			return err
		}
		plan.Executed = true
	}
	if c.JSON() {
		return c.WriteJSON(plan)
	}
	if err := c.writeAlterPlan(plan); err != nil {
		return err
	}
	if !f.execute {
		c.note("dry run: nothing changed; add --execute to apply this plan")
	}
	return nil
}

func (c *CLI) writeAlterPlan(plan view.AlterPlan) error {
	fmt.Fprintf(c.opts.Stdout, "stream %s\n", plan.Stream)
	tw := c.table()
	fmt.Fprintln(tw, "SETTING\tBEFORE\tAFTER\t")
	for _, s := range plan.Settings {
		mark := ""
		if s.Changed {
			mark = "changed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Setting, s.Before, s.After, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(c.opts.Stdout, "- %s\n", n)
	}
	if plan.Executed {
		fmt.Fprintf(c.opts.Stdout, "altered stream %s\n", plan.Stream)
	}
	return nil
}
