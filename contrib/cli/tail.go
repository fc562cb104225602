package sqlstreamscli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func compactJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

func (c *CLI) tailCmd() *cobra.Command {
	var o struct {
		after, last int64
		versions    []string
		key         string
		partition   int
		limit       int
		follow      bool
	}
	cmd := &cobra.Command{Use: "tail STREAM [--after ID | --last N] [--version V]... [--key K] [--partition P] [--follow]",
		Short: "Read the log without claiming (nothing is leased, no cursor moves)",
		Long: `tail prints the stream's rows in id order without claiming them. With --follow it keeps reading
new rows until interrupted (Ctrl-C); then the output is one object per line with -o json or jsonl.`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("after") && cmd.Flags().Changed("last") {
				return Usagef("tail takes --after or --last, not both")
			}
			if o.limit < 1 {
				return Usagef("--limit %d: print at least 1 row", o.limit)
			}
			opts := sqlstreams.BrowseOptions{AfterID: o.after, Limit: min(o.limit, sqlstreams.MaxBrowseLimit)}
			for _, v := range o.versions {
				n, err := parseVersion(v)
				if err != nil {
					return err
				}
				opts.Versions = append(opts.Versions, n)
			}
			if cmd.Flags().Changed("key") {
				opts.Key = &o.key
			}
			if cmd.Flags().Changed("partition") {
				opts.Partition = &o.partition
			}
			if cmd.Flags().Changed("last") {
				if o.last < 1 || o.last > sqlstreams.MaxBrowseLimit {
					return Usagef("--last %d: show 1 to %d rows", o.last, sqlstreams.MaxBrowseLimit)
				}
				opts.Last, opts.Limit = true, int(o.last)
				if !cmd.Flags().Changed("limit") {
					o.limit = int(o.last)
				}
			}
			lines := c.output == "jsonl" || (c.output == "json" && o.follow)
			var all []sqlstreams.Record
			header := true
			emit := func(recs []sqlstreams.Record) error {
				switch {
				case lines:
					for _, r := range recs {
						if err := c.writeJSONLine(view.RecordOf(r)); err != nil {
							return err
						}
					}
				case c.output == "json":
					all = append(all, recs...)
				default:
					err := c.writeRecords(recs, header)
					header = false
					return err
				}
				return nil
			}
			open := func() (*sqlstreams.Stream[sqlstreams.RawPayload], error) {
				octx, cancel := c.opCtx(ctx)
				defer cancel()
				_, s, err := c.raw(octx, args[0])
				if err != nil {
					return nil, err
				}
				_, err = s.Get(octx)
				return s, err
			}
			s, err := open()
			if err != nil {
				return err
			}
			printed, next, done := 0, opts.AfterID, false
			for {
				octx, cancel := c.opCtx(ctx)
				page, err := s.Browse(octx, opts)
				cancel()
				if err != nil {
					if o.follow && ctx.Err() != nil {
						return nil // interrupted
					}
					return err
				}
				recs := page.Records
				if !o.follow && printed+len(recs) > o.limit {
					recs = recs[:o.limit-printed]
				}
				done = page.Done && len(recs) == len(page.Records)
				if len(recs) > 0 {
					if err := emit(recs); err != nil {
						return err
					}
					printed += len(recs)
					next = recs[len(recs)-1].ID
				}
				if opts.Last {
					opts.Last, opts.Limit = false, min(o.limit, sqlstreams.MaxBrowseLimit)
				} else {
					next = max(next, page.Next)
				}
				opts.AfterID = next
				if !o.follow && (page.Done || printed >= o.limit) {
					break
				}
				if o.follow && page.Done {
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(c.opts.PollInterval):
					}
				}
			}
			if c.output == "json" {
				return c.WriteJSON(view.RecordPage{Stream: args[0], Records: view.RecordsOf(all), NextAfter: next, Done: done})
			}
			return nil
		})}
	f := cmd.Flags()
	f.Int64Var(&o.after, "after", 0, "rows with ids above this one")
	f.Int64Var(&o.last, "last", 0, "start with the newest N rows")
	f.StringSliceVar(&o.versions, "version", nil, "only rows at this schema version (repeatable)")
	f.StringVar(&o.key, "key", "", "only rows with this key")
	f.IntVar(&o.partition, "partition", 0, "only rows in this partition")
	f.IntVar(&o.limit, "limit", 100, "stop after this many rows (without --follow)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing new rows until interrupted")
	return cmd
}

// opCtx bounds one database call by --timeout.
func (c *CLI) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *CLI) writeJSONLine(v any) error {
	enc := json.NewEncoder(c.opts.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeRecords prints rows as a table; --follow prints the header with the
// first rows only.
func (c *CLI) writeRecords(recs []sqlstreams.Record, header bool) error {
	tw := c.table()
	if header {
		fmt.Fprintln(tw, "ID\tPARTITION\tVERSION\tKEY\tROUTING-KEY\tPRODUCED-AT\tPAYLOAD")
	}
	for _, r := range recs {
		key := "-"
		if r.HasKey {
			key = r.Key
		}
		fmt.Fprintf(tw, "%d\t%d\tv%d\t%s\t%s\t%s\t%s\n", r.ID, r.Partition, r.SchemaVersion, key, dash(r.RoutingKey), tableTime(r.ProducedAt), cut(compactJSON(r.Payload), 120))
	}
	return tw.Flush()
}
