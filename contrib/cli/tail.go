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

// tailFlags are the flags of tail.
type tailFlags struct {
	after, last int64
	versions    []string
	key         string
	partition   int
	limit       int
	follow      bool
}

func (c *CLI) tailCmd() *cobra.Command {
	var o tailFlags
	cmd := &cobra.Command{Use: "tail STREAM [--after ID | --last N] [--version V]... [--key K] [--partition P] [--follow]",
		Short: "Read the log without claiming (nothing is leased, no cursor moves)",
		Long: `tail prints the stream's rows in id order without claiming them. With --follow it keeps reading
new rows until interrupted (Ctrl-C); then the output is one object per line with -o json or jsonl.`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			opts, err := o.browseOptions(cmd)
			if err != nil {
				return err
			}
			s, err := c.openTail(ctx, args[0])
			if err != nil {
				return err
			}
			p := &tailPrinter{c: c, lines: c.output == "jsonl" || (c.output == "json" && o.follow), header: true}
			next, done, err := c.readTail(ctx, s, &o, opts, p)
			if err != nil || o.follow {
				return err // --follow ends only when interrupted
			}
			if c.output == "json" {
				return c.WriteJSON(view.RecordPage{Stream: args[0], Records: view.RecordsOf(p.all), NextAfter: next, Done: done})
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

// browseOptions checks the flags and makes the options of the first
// Browse call. --last reads the newest rows first and, unless --limit is
// given, prints that many.
func (o *tailFlags) browseOptions(cmd *cobra.Command) (sqlstreams.BrowseOptions, error) {
	if cmd.Flags().Changed("after") && cmd.Flags().Changed("last") {
		return sqlstreams.BrowseOptions{}, Usagef("tail takes --after or --last, not both")
	}
	if o.limit < 1 {
		return sqlstreams.BrowseOptions{}, Usagef("--limit %d: print at least 1 row", o.limit)
	}
	opts := sqlstreams.BrowseOptions{AfterID: o.after, Limit: min(o.limit, sqlstreams.MaxBrowseLimit)}
	for _, v := range o.versions {
		n, err := parseVersion(v)
		if err != nil {
			return sqlstreams.BrowseOptions{}, err
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
			return sqlstreams.BrowseOptions{}, Usagef("--last %d: show 1 to %d rows", o.last, sqlstreams.MaxBrowseLimit)
		}
		opts.Last, opts.Limit = true, int(o.last)
		if !cmd.Flags().Changed("limit") {
			o.limit = int(o.last)
		}
	}
	return opts, nil
}

// openTail returns the stream to tail, after reading it once so that a
// missing stream fails at once rather than tailing nothing.
func (c *CLI) openTail(ctx context.Context, name string) (*sqlstreams.Stream[sqlstreams.RawPayload], error) {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, s, err := c.raw(octx, name)
	if err != nil {
		return nil, err
	}
	_, err = s.Get(octx)
	return s, err
}

// tailPrinter prints the pages tail reads: JSON lines as they come (lines),
// a table with its header on the first page only, or, for -o json without
// --follow, nothing until the end, keeping the rows in all for one
// document.
type tailPrinter struct {
	c      *CLI
	lines  bool
	header bool
	all    []sqlstreams.Record
}

func (p *tailPrinter) emit(recs []sqlstreams.Record) error {
	switch {
	case p.lines:
		for _, r := range recs {
			if err := p.c.writeJSONLine(view.RecordOf(r)); err != nil {
				return err
			}
		}
	case p.c.output == "json":
		p.all = append(p.all, recs...)
	default:
		err := p.c.writeRecords(recs, p.header)
		p.header = false
		return err
	}
	return nil
}

// readTail browses s page by page from opts, each call bounded by
// --timeout, printing through p: up to --limit rows, or with --follow
// until ctx ends, polling for new rows once the log is read. It returns
// the id to read after next and whether the log was read to its end.
func (c *CLI) readTail(ctx context.Context, s *sqlstreams.Stream[sqlstreams.RawPayload], o *tailFlags, opts sqlstreams.BrowseOptions,
	p *tailPrinter) (next int64, done bool, err error) {
	printed := 0
	next = opts.AfterID
	for {
		octx, cancel := c.opCtx(ctx)
		page, err := s.Browse(octx, opts)
		cancel()
		if err != nil {
			if o.follow && ctx.Err() != nil {
				return next, done, nil // interrupted
			}
			return next, done, err
		}
		recs := page.Records
		if !o.follow && printed+len(recs) > o.limit {
			recs = recs[:o.limit-printed]
		}
		done = page.Done && len(recs) == len(page.Records)
		if len(recs) > 0 {
			if err := p.emit(recs); err != nil {
				return next, done, err
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
			return next, done, nil
		}
		if o.follow && page.Done {
			select {
			case <-ctx.Done():
				return next, done, nil
			case <-time.After(c.opts.PollInterval):
			}
		}
	}
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
