package sqlstreamscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

type problemJSON struct {
	Against   string `json:"against"`
	Direction string `json:"direction"`
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	Message   string `json:"message"`
}

type checkJSON struct {
	Compatible bool          `json:"compatible"`
	Level      string        `json:"level"`
	Problems   []problemJSON `json:"problems"`
	Note       string        `json:"note,omitempty"`
}

func (c *CLI) schemaCmd() *cobra.Command {
	list := &cobra.Command{Use: "list STREAM", Short: "List a stream's schema revisions and the groups reading each", Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			reg := client.Registry()
			revs, err := reg.Revisions(ctx, args[0], 0)
			if err != nil {
				return err
			}
			readers, err := reg.Readers(ctx, args[0])
			if err != nil {
				return err
			}
			type readerJSON struct {
				Group        string  `json:"group"`
				RegisteredAt *string `json:"registered_at"`
			}
			type revJSON struct {
				Version     int          `json:"version"`
				Revision    int          `json:"revision"`
				Fingerprint string       `json:"fingerprint"`
				CreatedAt   *string      `json:"created_at"`
				Readers     []readerJSON `json:"readers"`
				created     time.Time
			}
			out := []revJSON{}
			for _, r := range revs {
				j := revJSON{Version: r.Version, Revision: r.Revision, Fingerprint: r.Fingerprint, CreatedAt: jsonTime(r.CreatedAt), Readers: []readerJSON{}, created: r.CreatedAt}
				for _, rd := range readers {
					if rd.Version == r.Version && rd.Revision == r.Revision {
						j.Readers = append(j.Readers, readerJSON{rd.Group, jsonTime(rd.RegisteredAt)})
					}
				}
				out = append(out, j)
			}
			if c.JSON() {
				return c.WriteJSON(struct {
					Stream    string    `json:"stream"`
					Revisions []revJSON `json:"revisions"`
				}{args[0], out})
			}
			tw := c.table()
			fmt.Fprintln(tw, "VERSION\tREVISION\tFINGERPRINT\tCREATED\tREADERS")
			for _, r := range out {
				var names []string
				for _, rd := range r.Readers {
					names = append(names, rd.Group)
				}
				fmt.Fprintf(tw, "v%d\t%d\t%s\t%s\t%s\n", r.Version, r.Revision, r.Fingerprint, tableTime(r.created), dash(strings.Join(names, ",")))
			}
			return tw.Flush()
		})}

	var revision int
	show := &cobra.Command{Use: "show STREAM VERSION [--revision R]", Short: "Print a schema revision's canonical JSON (default: the latest)", Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			v, err := parseVersion(args[1])
			if err != nil {
				return err
			}
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			revs, err := client.Registry().Revisions(ctx, args[0], v)
			if err != nil {
				return err
			}
			if len(revs) == 0 {
				return fmt.Errorf("sqlstreams: stream %q has no schema recorded at version %d; list what it has with schema list", args[0], v)
			}
			rev := revs[len(revs)-1]
			if revision > 0 {
				found := false
				for _, r := range revs {
					if r.Revision == revision {
						rev, found = r, true
					}
				}
				if !found {
					return fmt.Errorf("sqlstreams: stream %q has no revision %d at version %d (it has 1 to %d)", args[0], revision, v, revs[len(revs)-1].Revision)
				}
			}
			canonical := rev.Text // a document of another type than JSON, as registered
			if rev.Schema != nil {
				canonical = rev.Schema.Canonical()
			}
			if c.JSON() {
				return c.WriteJSON(struct {
					Stream      string  `json:"stream"`
					Version     int     `json:"version"`
					Revision    int     `json:"revision"`
					Fingerprint string  `json:"fingerprint"`
					CreatedAt   *string `json:"created_at"`
					Schema      any     `json:"schema"`
				}{args[0], rev.Version, rev.Revision, rev.Fingerprint, jsonTime(rev.CreatedAt), json.RawMessage(canonical)})
			}
			_, err = fmt.Fprintln(c.opts.Stdout, strings.TrimRight(prettyJSON(canonical), "\n"))
			return err
		})}
	show.Flags().IntVar(&revision, "revision", 0, "revision to show (default the latest)")

	var offline bool
	var levelName, policyName string
	check := &cobra.Command{Use: "check (STREAM VERSION FILE.json | --offline OLD.json NEW.json [--level L])",
		Short: "Check a JSON Schema as a new revision (a dry run; exit 3 when incompatible)",
		Long: `check STREAM VERSION FILE.json checks the document as a new revision at VERSION, against the
stream's level and its deployed readers and writers, as registering would; it records nothing.

check --offline OLD.json NEW.json --level L compares two files with no database.

Every problem is printed; the exit code is 3 when the schema is incompatible.`,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if offline {
				if len(args) != 2 {
					return Usagef("schema check --offline takes OLD.json NEW.json")
				}
				return c.checkOffline(args[0], args[1], levelName, policyName)
			}
			if len(args) != 3 {
				return Usagef("schema check takes STREAM VERSION FILE.json (or --offline OLD.json NEW.json)")
			}
			if cmd.Flags().Changed("level") || cmd.Flags().Changed("policy") {
				return Usagef("--level and --policy go with --offline; online, the stream's level applies (see schema level get)")
			}
			v, err := parseVersion(args[1])
			if err != nil {
				return err
			}
			doc, err := os.ReadFile(args[2])
			if err != nil {
				return fmt.Errorf("sqlstreams: read the schema: %w", err)
			}
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			note := ""
			level, err := client.Registry().Level(ctx, args[0])
			if errors.Is(err, sqlstreams.ErrStreamNotFound) {
				note = fmt.Sprintf("stream %s does not exist yet: registering creates it and accepts any first schema", args[0])
				level, err = client.Registry().Level(ctx, sqlstreams.RegistryWide)
			}
			if err != nil {
				return err
			}
			err = client.Registry().Check(ctx, args[0], v, doc)
			var inc *sqlstreams.IncompatibleSchemaError
			out := checkJSON{Compatible: err == nil, Level: level.Value.String(), Problems: []problemJSON{}, Note: note}
			switch {
			case errors.As(err, &inc):
				out.Level = inc.Level.String()
				for _, p := range inc.Problems {
					out.Problems = append(out.Problems, problemJSON{p.Against, p.Direction.String(), string(p.Kind), p.Path, p.Message})
				}
			case err != nil:
				return err
			}
			return c.writeCheck(out, fmt.Sprintf("%s at version %d of stream %q", args[2], v, args[0]))
		})}
	check.Flags().BoolVar(&offline, "offline", false, "compare two files, with no database")
	check.Flags().StringVar(&levelName, "level", "BACKWARD", "compatibility level for --offline")
	check.Flags().StringVar(&policyName, "policy", "goaware", "rules for --offline: goaware (as the registry judges) or strict (Confluent's)")

	return group("schema", "Schema revisions, checks, and compatibility level and mode", list, show, check,
		c.settingCmd("level", "compatibility level", "BACKWARD"), c.settingCmd("mode", "registry mode", "READWRITE"))
}

func (c *CLI) checkOffline(oldPath, newPath, levelName, policyName string) error {
	level, err := schema.ParseLevel(levelName)
	if err != nil {
		return Usagef("--level: %v", err)
	}
	policy, err := parsePolicy(policyName)
	if err != nil {
		return err
	}
	read := func(path string) (*schema.Schema, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: read the schema: %w", err)
		}
		s, err := schema.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: %s: %w", path, err)
		}
		return s, nil
	}
	old, err := read(oldPath)
	if err != nil {
		return err
	}
	candidate, err := read(newPath)
	if err != nil {
		return err
	}
	rep := schema.Check(level, []*schema.Schema{old}, candidate, policy)
	out := checkJSON{Compatible: rep.Compatible(), Level: rep.Level.String(), Problems: []problemJSON{}}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, problemJSON{oldPath, p.Direction.String(), string(p.Kind), p.Path, p.Message})
	}
	return c.writeCheck(out, fmt.Sprintf("%s after %s", newPath, oldPath))
}

func (c *CLI) writeCheck(out checkJSON, what string) error {
	if c.JSON() {
		if err := c.WriteJSON(out); err != nil {
			return err
		}
	} else if out.Compatible {
		fmt.Fprintf(c.opts.Stdout, "compatible at level %s\n", out.Level)
		if out.Note != "" {
			fmt.Fprintln(c.opts.Stdout, out.Note)
		}
	} else {
		tw := c.table()
		fmt.Fprintln(tw, "AGAINST\tDIRECTION\tKIND\tPATH\tMESSAGE")
		for _, p := range out.Problems {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Against, p.Direction, p.Kind, p.Path, p.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !out.Compatible {
		return CheckFailedf("sqlstreams: %s is not compatible at level %s: %d problem(s)", what, out.Level, len(out.Problems))
	}
	return nil
}

// settingCmd builds schema level and schema mode: get, set and clear, per
// stream or registry-wide, showing where the effective value comes from.
func (c *CLI) settingCmd(what, long, def string) *cobra.Command {
	var global bool
	scope := func(args []string, n int) (string, error) {
		switch {
		case global && len(args) == n:
			return sqlstreams.RegistryWide, nil
		case !global && len(args) == n+1:
			return args[0], nil
		}
		return "", Usagef("schema %s: name a STREAM or pass --global (not both)", what)
	}
	show := func(ctx context.Context, reg *sqlstreams.Registry, stream string) error {
		var value, source string
		if what == "level" {
			s, err := reg.Level(ctx, stream)
			if err != nil {
				return err
			}
			value, source = s.Value.String(), s.Scope
		} else {
			s, err := reg.Mode(ctx, stream)
			if err != nil {
				return err
			}
			value, source = string(s.Value), s.Scope
		}
		name := stream
		if stream == sqlstreams.RegistryWide {
			name = "(registry-wide)"
		}
		if c.JSON() {
			return c.WriteJSON(map[string]any{"scope": name, what: value, "source": source})
		}
		tw := c.table()
		fmt.Fprintf(tw, "SCOPE\t%s\tSOURCE\n%s\t%s\t%s\n", strings.ToUpper(what), name, value, source)
		return tw.Flush()
	}
	registry := func(ctx context.Context) (*sqlstreams.Registry, error) {
		client, err := c.Client(ctx)
		if err != nil {
			return nil, err
		}
		return client.Registry(), nil
	}
	get := &cobra.Command{Use: "get [STREAM | --global]", Short: "Show the " + long + " in force and where it is set",
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			stream, err := scope(args, 0)
			if err != nil {
				return err
			}
			reg, err := registry(ctx)
			if err != nil {
				return err
			}
			return show(ctx, reg, stream)
		})}
	set := &cobra.Command{Use: "set (STREAM | --global) VALUE", Short: "Set the " + long,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			stream, err := scope(args, 1)
			if err != nil {
				return err
			}
			value := args[len(args)-1]
			reg, err := registry(ctx)
			if err != nil {
				return err
			}
			// The setting's own error, not a parse error shadowing it: a
			// refused change must fail the command.
			if what == "level" {
				l, perr := schema.ParseLevel(value)
				if perr != nil {
					return Usagef("%v", perr)
				}
				err = reg.SetLevel(ctx, stream, l)
			} else {
				m, perr := sqlstreams.ParseMode(value)
				if perr != nil {
					return Usagef("%v", perr)
				}
				err = reg.SetMode(ctx, stream, m)
			}
			if err != nil {
				return err
			}
			return show(ctx, reg, stream)
		})}
	clear := &cobra.Command{Use: "clear [STREAM | --global]", Short: "Remove the setting, so the wider one (or " + def + ") applies",
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			stream, err := scope(args, 0)
			if err != nil {
				return err
			}
			reg, err := registry(ctx)
			if err != nil {
				return err
			}
			if what == "level" {
				err = reg.ClearLevel(ctx, stream)
			} else {
				err = reg.ClearMode(ctx, stream)
			}
			if err != nil {
				return err
			}
			return show(ctx, reg, stream)
		})}
	g := group(what, "Get, set or clear the "+long+" of a stream or of the registry", get, set, clear)
	g.PersistentFlags().BoolVar(&global, "global", false, "the registry-wide setting")
	return g
}

// parsePolicy reads --policy: goaware (what a Go consumer decoding with
// encoding/json accepts) or strict (Confluent's rules).
func parsePolicy(name string) (schema.Policy, error) {
	switch strings.ToLower(name) {
	case "goaware":
		return schema.GoAware, nil
	case "strict":
		return schema.Strict, nil
	}
	return 0, Usagef("--policy %q: use goaware or strict", name)
}
