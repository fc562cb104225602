package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

type violationJSON struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

type validateJSON struct {
	Valid      bool            `json:"valid"`
	Stream     string          `json:"stream"`
	Version    int             `json:"version"`
	Revision   int             `json:"revision,omitempty"`
	Violations []violationJSON `json:"violations"`
}

func (c *CLI) schemaValidateCmd() *cobra.Command {
	return &cobra.Command{Use: "validate STREAM VERSION FILE|-",
		Short: "Validate a message (JSON) against the latest schema at a version (exit 3 when invalid)",
		Long: `validate reads one message, as JSON, from FILE (or standard input for -) and checks it against
the latest revision registered at VERSION of STREAM, by the rules of the revision's type: JSON Schema
(the draft its $schema names, 2020-12 without one; references resolved among the schemas the revision
references), AVRO and PROTOBUF. Every problem is printed with its path in the message; the exit code
is 3 when the message is invalid.`,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if len(args) != 3 {
				return Usagef("schema validate takes STREAM VERSION FILE (or - for standard input)")
			}
			return c.validateMessage(ctx, args[0], args[1], args[2])
		})}
}

func (c *CLI) validateMessage(ctx context.Context, stream, version, path string) error {
	v, err := parseVersion(version)
	if err != nil {
		return err
	}
	var payload []byte
	if path == "-" {
		payload, err = io.ReadAll(io.LimitReader(c.opts.Stdin, sqlstreams.MaxPayloadBytes+1))
	} else {
		payload, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("sqlstreams: read the message: %w", err)
	}
	client, err := c.Client(ctx)
	if err != nil {
		return err
	}
	out := validateJSON{Valid: true, Stream: stream, Version: v, Violations: []violationJSON{}}
	err = client.Registry().Validate(ctx, stream, v, payload)
	var invalid *sqlstreams.ValidationError
	switch {
	case errors.As(err, &invalid):
		out.Valid, out.Revision = false, invalid.Revision
		for _, p := range invalid.Violations {
			out.Violations = append(out.Violations, violationJSON{Path: "/" + trimSlash(p.Path), Message: p.Message})
		}
	case err != nil:
		return err
	}
	if c.JSON() {
		if err := c.WriteJSON(out); err != nil {
			return err
		}
	} else if out.Valid {
		fmt.Fprintf(c.opts.Stdout, "valid at version %d of stream %q\n", v, stream)
	} else {
		tw := c.table()
		fmt.Fprintln(tw, "PATH\tMESSAGE")
		for _, p := range out.Violations {
			fmt.Fprintf(tw, "%s\t%s\n", p.Path, p.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !out.Valid {
		return CheckFailedf("sqlstreams: the message breaks revision %d at version %d of stream %q: %d problem(s)", out.Revision, v, stream, len(out.Violations))
	}
	return nil
}

// trimSlash drops a pointer's leading slash, so the whole message prints as
// "/" and a field as "/id".
func trimSlash(p string) string {
	if len(p) > 0 && p[0] == '/' {
		return p[1:]
	}
	return p
}
