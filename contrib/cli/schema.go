package sqlstreamscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
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
	return group("schema", "Schema revisions, checks, and compatibility level and mode",
		c.schemaListCmd(), c.schemaShowCmd(), c.schemaRegisterCmd(), c.schemaCheckCmd(), c.schemaValidateCmd(),
		c.settingCmd("level", "compatibility level", "BACKWARD"), c.settingCmd("mode", "registry mode", "READWRITE"))
}

// typeHelp is said wherever a command reads a schema file: the one rule for
// telling a document's type.
const typeHelp = `A file's type comes from its extension: .json is JSON (JSON Schema), .avsc is AVRO, .proto is
PROTOBUF; --type JSON|AVRO|PROTOBUF says it for any other name (and overrides the extension).`

// typeFlag parses a --type value: one of the types the CLI enables.
func typeFlag(value string) (schema.Type, error) {
	t, err := schema.ParseType(value)
	if err == nil {
		for _, known := range knownTypes() {
			if t == known {
				return t, nil
			}
		}
	}
	return "", Usagef("--type %q: use %s", value, typeNames())
}

func knownTypes() []schema.Type {
	out := []schema.Type{schema.TypeJSON}
	for _, f := range formats() {
		out = append(out, f.Type())
	}
	return out
}

func typeNames() string {
	var names []string
	for _, t := range knownTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// fileType is the type of the document in path: --type when given, else
// what the extension says. Guessing from the content would read a .proto
// that happens to parse as JSON, or an Avro schema that is valid JSON
// Schema, as the wrong type, so an unknown extension is a usage error.
func fileType(flag, path string) (schema.Type, error) {
	if flag != "" {
		return typeFlag(flag)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		return schema.TypeJSON, nil
	case ".avsc":
		return schema.TypeAvro, nil
	case ".proto":
		return schema.TypeProtobuf, nil
	default:
		return "", Usagef("%s: the extension %q does not say the schema type (.json, .avsc or .proto do); pass --type %s", path, ext, strings.ReplaceAll(typeNames(), ", ", "|"))
	}
}

// readDocument reads a schema file and tells its type.
func readDocument(typeName, path string) (schema.Type, []byte, error) {
	t, err := fileType(typeName, path)
	if err != nil {
		return "", nil, err
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("sqlstreams: read the schema: %w", err)
	}
	return t, doc, nil
}

type revisionJSON struct {
	Version     int          `json:"version"`
	Revision    int          `json:"revision"`
	Type        string       `json:"type"`
	Fingerprint string       `json:"fingerprint"`
	CreatedAt   *string      `json:"created_at"`
	Readers     []readerJSON `json:"readers"`
	created     time.Time
}

type readerJSON struct {
	Group        string  `json:"group"`
	RegisteredAt *string `json:"registered_at"`
}

func (c *CLI) schemaListCmd() *cobra.Command {
	var typeName string
	list := &cobra.Command{Use: "list STREAM [--type T]", Short: "List a stream's schema revisions, their types and the groups reading each", Args: cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			var only schema.Type
			if typeName != "" {
				t, err := typeFlag(typeName)
				if err != nil {
					return err
				}
				only = t
			}
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
			out := []revisionJSON{}
			for _, r := range revs {
				if only != "" && r.Type != only {
					continue
				}
				j := revisionJSON{Version: r.Version, Revision: r.Revision, Type: string(r.Type), Fingerprint: r.Fingerprint,
					CreatedAt: jsonTime(r.CreatedAt), Readers: []readerJSON{}, created: r.CreatedAt}
				for _, rd := range readers {
					if rd.Version == r.Version && rd.Revision == r.Revision {
						j.Readers = append(j.Readers, readerJSON{rd.Group, jsonTime(rd.RegisteredAt)})
					}
				}
				out = append(out, j)
			}
			return c.writeRevisions(args[0], out)
		})}
	list.Flags().StringVar(&typeName, "type", "", "list only the revisions of this type: "+typeNames())
	return list
}

func (c *CLI) writeRevisions(stream string, out []revisionJSON) error {
	if c.JSON() {
		return c.WriteJSON(struct {
			Stream    string         `json:"stream"`
			Revisions []revisionJSON `json:"revisions"`
		}{stream, out})
	}
	tw := c.table()
	fmt.Fprintln(tw, "VERSION\tREVISION\tTYPE\tFINGERPRINT\tCREATED\tREADERS")
	for _, r := range out {
		var names []string
		for _, rd := range r.Readers {
			names = append(names, rd.Group)
		}
		fmt.Fprintf(tw, "v%d\t%d\t%s\t%s\t%s\t%s\n", r.Version, r.Revision, r.Type, r.Fingerprint, tableTime(r.created), dash(strings.Join(names, ",")))
	}
	return tw.Flush()
}

func (c *CLI) schemaShowCmd() *cobra.Command {
	var revision int
	var typeName string
	show := &cobra.Command{Use: "show STREAM VERSION [--revision R] [--type T]", Short: "Print a schema revision (default: the latest at the version)",
		Long: `show prints a revision's document: a JSON Schema in its canonical form, an AVRO or PROTOBUF
document as it was registered. --type picks the latest revision of that type at the version.
With -o json, "schema" is the document itself for JSON and AVRO (both are JSON) and a string
holding the .proto text for PROTOBUF.`,
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			v, err := parseVersion(args[1])
			if err != nil {
				return err
			}
			var only schema.Type
			if typeName != "" {
				if only, err = typeFlag(typeName); err != nil {
					return err
				}
			}
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			revs, err := client.Registry().Revisions(ctx, args[0], v)
			if err != nil {
				return err
			}
			rev, err := pickRevision(args[0], v, revs, revision, only)
			if err != nil {
				return err
			}
			return c.writeRevision(args[0], rev)
		})}
	show.Flags().IntVar(&revision, "revision", 0, "revision to show (default the latest)")
	show.Flags().StringVar(&typeName, "type", "", "show the latest revision of this type: "+typeNames())
	return show
}

// pickRevision finds the revision show prints: the given one, or the latest
// (of the given type, when one is).
func pickRevision(stream string, v int, revs []sqlstreams.Revision, revision int, only schema.Type) (sqlstreams.Revision, error) {
	if len(revs) == 0 {
		return sqlstreams.Revision{}, fmt.Errorf("sqlstreams: stream %q has no schema recorded at version %d; list what it has with schema list", stream, v)
	}
	for i := len(revs) - 1; i >= 0; i-- {
		r := revs[i]
		if (revision == 0 || r.Revision == revision) && (only == "" || r.Type == only) {
			return r, nil
		}
		if r.Revision == revision {
			return sqlstreams.Revision{}, fmt.Errorf("sqlstreams: revision %d at version %d of stream %q is %s, not %s; leave out --type or --revision", revision, v, stream, r.Type, only)
		}
	}
	if revision != 0 {
		return sqlstreams.Revision{}, fmt.Errorf("sqlstreams: stream %q has no revision %d at version %d (it has 1 to %d)", stream, revision, v, revs[len(revs)-1].Revision)
	}
	return sqlstreams.Revision{}, fmt.Errorf("sqlstreams: stream %q has no %s schema at version %d; list what it has with schema list", stream, only, v)
}

func (c *CLI) writeRevision(stream string, rev sqlstreams.Revision) error {
	text := rev.Text // a document of another type than JSON, as registered
	if rev.Schema != nil {
		text = rev.Schema.Canonical()
	}
	if c.JSON() {
		var doc any = json.RawMessage(text)
		if rev.Type == schema.TypeProtobuf || !json.Valid(text) {
			doc = string(text)
		}
		return c.WriteJSON(struct {
			Stream      string  `json:"stream"`
			Version     int     `json:"version"`
			Revision    int     `json:"revision"`
			Type        string  `json:"type"`
			Fingerprint string  `json:"fingerprint"`
			ID          int64   `json:"id,omitempty"`
			CreatedAt   *string `json:"created_at"`
			Schema      any     `json:"schema"`
		}{stream, rev.Version, rev.Revision, string(rev.Type), rev.Fingerprint, rev.ID, jsonTime(rev.CreatedAt), doc})
	}
	_, err := fmt.Fprintln(c.opts.Stdout, strings.TrimRight(view.PrettyJSON(text), "\n"))
	return err
}

func (c *CLI) schemaRegisterCmd() *cobra.Command {
	var typeName string
	register := &cobra.Command{Use: "register STREAM VERSION FILE [--type T]",
		Short: "Register a schema document as a revision of a stream at a version (exit 3 when incompatible)",
		Long: `register records the document in FILE as a new revision of the stream at VERSION, through the
same gate as a producer's registration: the stream's level against the revisions at the version,
the readers deployed at it and the schemas that reference it. The stream is created when it is
missing. A document already recorded there prints its revision and writes nothing.

` + typeHelp + `

Every problem is printed; the exit code is 3 when the schema is incompatible, and nothing is written.`,
		Args: cobra.ExactArgs(3),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			v, err := parseVersion(args[1])
			if err != nil {
				return err
			}
			t, doc, err := readDocument(typeName, args[2])
			if err != nil {
				return err
			}
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			rev, err := client.Registry().RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: args[0], Version: v, Type: t, Schema: doc})
			var inc *sqlstreams.IncompatibleSchemaError
			if errors.As(err, &inc) {
				return c.writeCheck(incompatible(inc, ""), fmt.Sprintf("%s at version %d of stream %q", args[2], v, args[0]), "; nothing was registered")
			}
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.writeRevision(args[0], rev)
			}
			tw := c.table()
			fmt.Fprintln(tw, "STREAM\tVERSION\tREVISION\tTYPE\tID\tFINGERPRINT")
			fmt.Fprintf(tw, "%s\tv%d\t%d\t%s\t%d\t%s\n", args[0], rev.Version, rev.Revision, rev.Type, rev.ID, rev.Fingerprint)
			return tw.Flush()
		})}
	register.Flags().StringVar(&typeName, "type", "", "the document's type ("+typeNames()+"); default from the file's extension")
	return register
}

// incompatible is the check report of a refused registration or dry run.
func incompatible(inc *sqlstreams.IncompatibleSchemaError, note string) checkJSON {
	out := checkJSON{Compatible: false, Level: inc.Level.String(), Problems: []problemJSON{}, Note: note}
	for _, p := range inc.Problems {
		out.Problems = append(out.Problems, problemJSON{p.Against, p.Direction.String(), string(p.Kind), p.Path, p.Message})
	}
	return out
}

func (c *CLI) schemaCheckCmd() *cobra.Command {
	var offline bool
	var levelName, policyName, typeName string
	check := &cobra.Command{Use: "check (STREAM VERSION FILE | --offline OLD NEW [--level L]) [--type T]",
		Short: "Check a schema document as a new revision (a dry run; exit 3 when incompatible)",
		Long: `check STREAM VERSION FILE checks the document as a new revision at VERSION, against the
stream's level and its deployed readers and writers, as registering would; it records nothing.

check --offline OLD NEW --level L compares two files with no database, by the rules of their type.
--policy applies to JSON Schema only.

` + typeHelp + `

Every problem is printed; the exit code is 3 when the schema is incompatible.`,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if offline {
				if len(args) != 2 {
					return Usagef("schema check --offline takes OLD NEW (two schema files)")
				}
				return c.checkOffline(args[0], args[1], typeName, levelName, policyName, cmd.Flags().Changed("policy"))
			}
			if len(args) != 3 {
				return Usagef("schema check takes STREAM VERSION FILE (or --offline OLD NEW)")
			}
			if cmd.Flags().Changed("level") || cmd.Flags().Changed("policy") {
				return Usagef("--level and --policy go with --offline; online, the stream's level applies (see schema level get)")
			}
			return c.checkOnline(ctx, args[0], args[1], args[2], typeName)
		})}
	check.Flags().BoolVar(&offline, "offline", false, "compare two files, with no database")
	check.Flags().StringVar(&levelName, "level", "BACKWARD", "compatibility level for --offline")
	check.Flags().StringVar(&policyName, "policy", "goaware", "JSON Schema rules for --offline: goaware (as the registry judges) or strict (Confluent's)")
	check.Flags().StringVar(&typeName, "type", "", "the documents' type ("+typeNames()+"); default from each file's extension")
	return check
}

func (c *CLI) checkOnline(ctx context.Context, stream, version, path, typeName string) error {
	v, err := parseVersion(version)
	if err != nil {
		return err
	}
	t, doc, err := readDocument(typeName, path)
	if err != nil {
		return err
	}
	client, err := c.Client(ctx)
	if err != nil {
		return err
	}
	note := ""
	level, err := client.Registry().Level(ctx, stream)
	if errors.Is(err, sqlstreams.ErrStreamNotFound) {
		note = fmt.Sprintf("stream %s does not exist yet: registering creates it and accepts any first schema", stream)
		level, err = client.Registry().Level(ctx, sqlstreams.RegistryWide)
	}
	if err != nil {
		return err
	}
	err = client.Registry().CheckDocument(ctx, sqlstreams.SchemaRegistration{Stream: stream, Version: v, Type: t, Schema: doc})
	out := checkJSON{Compatible: true, Level: level.Value.String(), Problems: []problemJSON{}, Note: note}
	var inc *sqlstreams.IncompatibleSchemaError
	switch {
	case errors.As(err, &inc):
		out = incompatible(inc, note)
	case err != nil:
		return err
	}
	return c.writeCheck(out, fmt.Sprintf("%s at version %d of stream %q", path, v, stream), "")
}

// checkOffline judges NEW after OLD with no database: each file parsed by
// its type's format and compared by schema.Judge, the engine the registry
// uses, so the verdict is the one registering would give against OLD alone.
func (c *CLI) checkOffline(oldPath, newPath, typeName, levelName, policyName string, policySet bool) error {
	level, err := schema.ParseLevel(levelName)
	if err != nil {
		return Usagef("--level: %v", err)
	}
	policy, err := parsePolicy(policyName)
	if err != nil {
		return err
	}
	var types [2]schema.Type
	for i, path := range []string{oldPath, newPath} {
		if types[i], err = fileType(typeName, path); err != nil {
			return err
		}
		if policySet && types[i] != schema.TypeJSON {
			return Usagef("--policy applies to JSON Schema documents; %s is %s, judged by its own rules", path, types[i])
		}
	}
	old, err := parseFile(oldPath, types[0], policy)
	if err != nil {
		return err
	}
	candidate, err := parseFile(newPath, types[1], policy)
	if err != nil {
		return err
	}
	rep := schema.Judge(level, []schema.Document{old}, candidate)
	out := checkJSON{Compatible: rep.Compatible(), Level: rep.Level.String(), Problems: []problemJSON{}}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, problemJSON{oldPath, p.Direction.String(), string(p.Kind), p.Path, p.Message})
	}
	return c.writeCheck(out, fmt.Sprintf("%s after %s", newPath, oldPath), "")
}

// parseFile reads a schema file as a document of type t: JSON Schema
// judged under policy, other types by their format.
func parseFile(path string, t schema.Type, policy schema.Policy) (schema.Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: read the schema: %w", err)
	}
	if t == schema.TypeJSON {
		s, err := schema.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: %s: %w", path, err)
		}
		return schema.JSONDocument(s, policy), nil
	}
	for _, f := range formats() {
		if f.Type() == t {
			doc, err := f.Parse(data)
			if err != nil {
				return nil, fmt.Errorf("sqlstreams: %s: %s schema: %w", path, t, err)
			}
			return doc, nil
		}
	}
	return nil, Usagef("--type %s: use %s", t, typeNames())
}

// writeCheck prints a verdict; an incompatible one fails with
// ErrCheckFailed, its message ending in tail.
func (c *CLI) writeCheck(out checkJSON, what, tail string) error {
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
		return CheckFailedf("sqlstreams: %s is not compatible at level %s: %d problem(s)%s", what, out.Level, len(out.Problems), tail)
	}
	return nil
}

// settingCmd builds schema level and schema mode: get, set and clear, per
// stream version (--version), per stream or registry-wide, showing where
// the effective value comes from.
func (c *CLI) settingCmd(what, long, def string) *cobra.Command {
	var global, force bool
	var version int
	scope := func(args []string, n int) (settingScope, error) {
		switch {
		case version < 0 || version > 0 && global:
			return settingScope{}, Usagef("schema %s: --version takes a version (1 or more) of a STREAM, not --global", what)
		case global && len(args) == n:
			return settingScope{stream: sqlstreams.RegistryWide}, nil
		case !global && len(args) == n+1:
			return settingScope{stream: args[0], version: version}, nil
		}
		return settingScope{}, Usagef("schema %s: name a STREAM or pass --global (not both)", what)
	}
	// act runs one subcommand's change on the scope, then shows the
	// setting in force.
	act := func(n int, change func(context.Context, *sqlstreams.Registry, settingScope, []string) error) func(*cobra.Command, []string) error {
		return c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			sc, err := scope(args, n)
			if err != nil {
				return err
			}
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			reg := client.Registry()
			if err := change(ctx, reg, sc, args); err != nil {
				return err
			}
			return c.showSetting(ctx, reg, what, sc)
		})
	}
	get := &cobra.Command{Use: "get [STREAM [--version N] | --global]", Short: "Show the " + long + " in force and where it is set",
		RunE: act(0, func(context.Context, *sqlstreams.Registry, settingScope, []string) error { return nil })}
	set := &cobra.Command{Use: "set (STREAM [--version N] | --global) VALUE", Short: "Set the " + long,
		RunE: act(1, func(ctx context.Context, reg *sqlstreams.Registry, sc settingScope, args []string) error {
			return sc.set(ctx, reg, what, args[len(args)-1], force)
		})}
	set.Flags().BoolVar(&force, "force", false, "with --version, IMPORT on a version that has revisions")
	clear := &cobra.Command{Use: "clear [STREAM [--version N] | --global]", Short: "Remove the setting, so the wider one (or " + def + ") applies",
		RunE: act(0, func(ctx context.Context, reg *sqlstreams.Registry, sc settingScope, _ []string) error {
			return sc.clear(ctx, reg, what)
		})}
	g := group(what, "Get, set or clear the "+long+" of a stream version, a stream or the registry", get, set, clear)
	g.PersistentFlags().BoolVar(&global, "global", false, "the registry-wide setting")
	g.PersistentFlags().IntVar(&version, "version", 0, "one version of the STREAM: its own setting, which wins over the stream's")
	return g
}

// settingScope is what schema level and schema mode act on: a stream
// version, a whole stream (version 0) or the registry (RegistryWide).
type settingScope struct {
	stream  string
	version int
}

// set parses value and sets it on the scope. The setting's own error is
// returned, not a parse error shadowing it: a refused change must fail
// the command.
func (sc settingScope) set(ctx context.Context, reg *sqlstreams.Registry, what, value string, force bool) error {
	if what == "level" {
		l, err := schema.ParseLevel(value)
		if err != nil {
			return Usagef("%v", err)
		}
		if sc.version > 0 {
			return reg.SetVersionLevel(ctx, sc.stream, sc.version, l)
		}
		return reg.SetLevel(ctx, sc.stream, l)
	}
	m, err := sqlstreams.ParseMode(value)
	if err != nil {
		return Usagef("%v", err)
	}
	if sc.version > 0 {
		return reg.SetVersionMode(ctx, sc.stream, sc.version, m, force)
	}
	return reg.SetMode(ctx, sc.stream, m)
}

// clear removes the scope's own level or mode.
func (sc settingScope) clear(ctx context.Context, reg *sqlstreams.Registry, what string) error {
	switch {
	case what == "level" && sc.version > 0:
		return reg.ClearVersionLevel(ctx, sc.stream, sc.version)
	case what == "level":
		return reg.ClearLevel(ctx, sc.stream)
	case sc.version > 0:
		return reg.ClearVersionMode(ctx, sc.stream, sc.version)
	}
	return reg.ClearMode(ctx, sc.stream)
}

// showSetting prints the level or mode (what) in force for a scope and
// where it is set.
func (c *CLI) showSetting(ctx context.Context, reg *sqlstreams.Registry, what string, sc settingScope) error {
	var value, source string
	if what == "level" {
		s, err := reg.VersionLevel(ctx, sc.stream, sc.version)
		if err != nil {
			return err
		}
		value, source = s.Value.String(), s.Scope
	} else {
		s, err := reg.VersionMode(ctx, sc.stream, sc.version)
		if err != nil {
			return err
		}
		value, source = string(s.Value), s.Scope
	}
	name := sc.stream
	switch {
	case sc.stream == sqlstreams.RegistryWide:
		name = "(registry-wide)"
	case sc.version > 0:
		name = fmt.Sprintf("%s version %d", sc.stream, sc.version)
	}
	if c.JSON() {
		out := map[string]any{"scope": sc.stream, what: value, "source": source}
		if sc.stream == sqlstreams.RegistryWide {
			out["scope"] = name
		}
		if sc.version > 0 {
			out["version"] = sc.version
		}
		return c.WriteJSON(out)
	}
	tw := c.table()
	fmt.Fprintf(tw, "SCOPE\t%s\tSOURCE\n%s\t%s\t%s\n", strings.ToUpper(what), name, value, source)
	return tw.Flush()
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
