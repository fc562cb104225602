package sqlstreamscli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// produceBatch is how many stdin lines one ProduceBatch writes: one
// transaction and one round trip each.
const produceBatch = 500

type produceOpts struct {
	version, key, keyField, routingKey, data string
	headers                                  []string
	progress                                 bool
}

func (c *CLI) produceCmd() *cobra.Command {
	var o produceOpts
	cmd := &cobra.Command{Use: "produce STREAM --version V [--key K | --key-field F] [--routing-key RK] [--header k=v]... [--data JSON | < lines.jsonl]",
		Short: "Append raw JSON payloads at a schema version: --data, or one per line of stdin (records no schema)",
		Long: `produce appends raw JSON payloads at schema version V. It records no schema and never creates the
stream.

With --data it appends that one payload. Without it, it reads stdin as JSON Lines: one payload per
line, blank lines skipped, each line at most 4 MiB. --key-field F takes each line's key from its
top-level field F (a string or a number; a line without it is an error); --key, --routing-key and
every --header apply to every line. Lines are written in batches of 500, each batch in one
transaction, so a failure leaves no batch half-written: every batch before the one with the failing
line is written, and nothing from that batch on. The error names the line, and says how many lines
were written (their last id), so the rest can be sent again with tail -n +LINE.

On a terminal, stderr shows a progress line; --progress prints one line per batch on stderr
anywhere (for logs).`,
		Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			v, popts, err := o.parse(cmd)
			if err != nil {
				return err
			}
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			if _, err := s.Get(ctx); err != nil {
				return err // produce never creates a stream: a typo would make a new one
			}
			p, err := s.Producer().Register(ctx, nil)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("data") {
				return c.produceLines(ctx, args[0], p, v, o.keyField, o.progress, popts)
			}
			id, err := p.Produce(ctx, sqlstreams.RawPayload{Version: v, Data: []byte(o.data)}, popts...)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(map[string]any{"stream": args[0], "id": id})
			}
			tw := c.table()
			fmt.Fprintf(tw, "ID\n%d\n", id)
			return tw.Flush()
		})}
	f := cmd.Flags()
	f.StringVar(&o.version, "version", "", "schema version of the payloads (required)")
	f.StringVar(&o.key, "key", "", "message key (partition and compaction), for every message")
	f.StringVar(&o.keyField, "key-field", "", "stdin: take each line's key from this top-level field")
	f.StringVar(&o.routingKey, "routing-key", "", "routing key (group bindings)")
	f.StringArrayVar(&o.headers, "header", nil, "header name=value (repeatable; applies to every message)")
	f.StringVar(&o.data, "data", "", "one JSON payload (default: JSON Lines on stdin)")
	f.BoolVar(&o.progress, "progress", false, "stdin: print a progress line per batch on stderr even when it is not a terminal")
	return cmd
}

// parse checks the flags before the database is touched.
func (o *produceOpts) parse(cmd *cobra.Command) (int, []sqlstreams.ProduceOption, error) {
	if o.version == "" {
		return 0, nil, Usagef("produce needs --version: the schema version the payload is written at (2 or v2)")
	}
	v, err := parseVersion(o.version)
	if err != nil {
		return 0, nil, err
	}
	data := cmd.Flags().Changed("data")
	switch {
	case data && (o.keyField != "" || o.progress):
		return 0, nil, Usagef("--key-field and --progress read stdin; with --data use --key")
	case data && len(bytes.TrimSpace([]byte(o.data))) == 0:
		return 0, nil, Usagef("produce needs a payload: --data '{\"...\"}' or JSON Lines on stdin")
	case cmd.Flags().Changed("key") && o.keyField != "":
		return 0, nil, Usagef("produce takes --key or --key-field, not both")
	}
	var popts []sqlstreams.ProduceOption
	if cmd.Flags().Changed("key") {
		popts = append(popts, sqlstreams.Key(o.key))
	}
	if o.routingKey != "" {
		popts = append(popts, sqlstreams.RoutingKey(o.routingKey))
	}
	for _, h := range o.headers {
		k, val, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return 0, nil, Usagef("--header %q: write name=value", h)
		}
		popts = append(popts, sqlstreams.Header(k, val))
	}
	return v, popts, nil
}

// lineBatch is the messages of one batch with the stdin line of each.
type lineBatch struct {
	msgs  []sqlstreams.Message[sqlstreams.RawPayload]
	lines []int
}

// produced counts what produceLines has written.
type produced struct {
	Stream   string `json:"stream"`
	Produced int64  `json:"produced"`
	FirstID  int64  `json:"first_id"`
	LastID   int64  `json:"last_id"`
	// lines is the last stdin line written.
	lines int
}

// produceLines writes stdin's JSON Lines in batches of produceBatch.
func (c *CLI) produceLines(ctx context.Context, stream string, p *sqlstreams.Producer[sqlstreams.RawPayload], version int, keyField string,
	progress bool, popts []sqlstreams.ProduceOption) error {
	sc := bufio.NewScanner(c.opts.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), sqlstreams.MaxPayloadBytes+1)
	out := produced{Stream: stream}
	show := c.produceProgress(progress)
	var b lineBatch
	flush := func() error {
		if len(b.msgs) == 0 {
			return nil
		}
		ids, err := p.ProduceBatch(ctx, b.msgs...)
		if err != nil {
			return out.failed(b, err)
		}
		if out.FirstID == 0 {
			out.FirstID = ids[0]
		}
		out.Produced, out.LastID, out.lines = out.Produced+int64(len(ids)), ids[len(ids)-1], b.lines[len(b.lines)-1]
		show(out, false)
		b = lineBatch{}
		return nil
	}
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		msg, err := lineMessage(raw, version, keyField, popts)
		if err != nil {
			return out.failedAt(line, err)
		}
		b.msgs, b.lines = append(b.msgs, msg), append(b.lines, line)
		if len(b.msgs) == produceBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%w: the line is longer than %d bytes, the payload limit", sqlstreams.ErrInvalidMessage, sqlstreams.MaxPayloadBytes)
		}
		return out.failedAt(line+1, err)
	}
	if err := flush(); err != nil {
		return err
	}
	show(out, true)
	if out.Produced == 0 {
		return Usagef("produce needs a payload: --data '{\"...\"}' or JSON Lines on stdin (stdin had none)")
	}
	if c.JSON() {
		return c.WriteJSON(out)
	}
	tw := c.table()
	fmt.Fprintf(tw, "PRODUCED\tFIRST-ID\tLAST-ID\n%d\t%d\t%d\n", out.Produced, out.FirstID, out.LastID)
	return tw.Flush()
}

// lineMessage makes one stdin line's message: its payload (checked to be
// JSON here, so that the error can name the line) and, with keyField, its
// key.
func lineMessage(raw []byte, version int, keyField string, popts []sqlstreams.ProduceOption) (sqlstreams.Message[sqlstreams.RawPayload], error) {
	data := bytes.Clone(raw)
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return sqlstreams.Message[sqlstreams.RawPayload]{}, fmt.Errorf("%w: not a JSON document: %v", sqlstreams.ErrInvalidMessage, err)
	}
	opts := popts
	if keyField != "" {
		key, err := fieldKey(data, keyField)
		if err != nil {
			return sqlstreams.Message[sqlstreams.RawPayload]{}, err
		}
		opts = append(slices.Clip(popts), sqlstreams.Key(key))
	}
	return sqlstreams.NewMessage(sqlstreams.RawPayload{Version: version, Data: data}, opts...), nil
}

// fieldKey reads the top-level field as a key: a string as it is, a number
// as written.
func fieldKey(data []byte, field string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return "", fmt.Errorf("%w: --key-field %s needs a JSON object on each line", sqlstreams.ErrInvalidMessage, field)
	}
	v, ok := obj[field]
	if !ok || string(v) == "null" {
		return "", fmt.Errorf("%w: no top-level field %q (or it is null) to take the key from", sqlstreams.ErrInvalidMessage, field)
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	if _, err := strconv.ParseFloat(string(v), 64); err == nil {
		return string(v), nil
	}
	return "", fmt.Errorf("%w: field %q is %s; a key is a string or a number", sqlstreams.ErrInvalidMessage, field, cut(string(v), 40))
}

// batchIndex finds the message core names in a batch's error.
var batchIndex = regexp.MustCompile(`message (\d+) of the batch`)

// failedAt reports a failure at a stdin line, before its batch was sent.
func (p produced) failedAt(line int, err error) error {
	return fmt.Errorf("sqlstreams: stdin line %d: %w; %s", line, err, p.written())
}

// failed reports a batch ProduceBatch refused: nothing of it was written.
func (p produced) failed(b lineBatch, err error) error {
	if m := batchIndex.FindStringSubmatch(err.Error()); m != nil {
		if i, _ := strconv.Atoi(m[1]); i < len(b.lines) {
			return p.failedAt(b.lines[i], err)
		}
	}
	return fmt.Errorf("sqlstreams: stdin lines %d to %d: %w; %s", b.lines[0], b.lines[len(b.lines)-1], err, p.written())
}

func (p produced) written() string {
	if p.Produced == 0 {
		return "nothing was written"
	}
	return fmt.Sprintf("lines 1 to %d were written before it (%d messages, last id %d), nothing after them: send the rest again from line %d",
		p.lines, p.Produced, p.LastID, p.lines+1)
}

// produceProgress returns what shows progress after each batch: a line
// rewritten in place on a terminal, a line per batch with --progress, or
// nothing.
func (c *CLI) produceProgress(always bool) func(p produced, last bool) {
	switch {
	case always:
		return func(p produced, last bool) {
			if !last {
				c.note("produced %d messages (lines 1 to %d, last id %d)", p.Produced, p.lines, p.LastID)
			}
		}
	case c.opts.Terminal(c.opts.Stderr):
		drawn := false
		return func(p produced, last bool) {
			if last || p.Produced < produceBatch { // short input: no progress
				if last && drawn {
					fmt.Fprintln(c.opts.Stderr)
				}
				return
			}
			drawn = true
			fmt.Fprintf(c.opts.Stderr, "\rproduced %d messages (line %d, last id %d)", p.Produced, p.lines, p.LastID)
		}
	}
	return func(produced, bool) {}
}
