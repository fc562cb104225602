package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// errGroupExists: groups create named a group the stream has already (core
// has no such sentinel: registering a consumer joins a group that exists).
var errGroupExists = errors.New("consumer group already exists")

// groupPosition is where groups create puts a new group's cursors: a start
// position the driver applies as it creates the group, and for a time or an
// id a reset that follows.
type groupPosition struct {
	start sqlstreams.StartPosition
	reset *sqlstreams.ResetTo
}

// parseAt reads --at: earliest, latest, an RFC 3339 time or a row id (the
// next id the group reads, as groups reset --to-id).
func parseAt(s string) (groupPosition, error) {
	switch s {
	case "earliest":
		return groupPosition{start: sqlstreams.StartEarliest}, nil
	case "latest":
		return groupPosition{start: sqlstreams.StartLatest}, nil
	}
	if id, err := strconv.ParseInt(s, 10, 64); err == nil && id >= 1 {
		to := sqlstreams.ResetToID(id)
		return groupPosition{reset: &to}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		to := sqlstreams.ResetToTime(t)
		return groupPosition{reset: &to}, nil
	}
	return groupPosition{}, Usagef("--at %q: write earliest, latest, an RFC 3339 time such as 2026-12-01T09:00:00Z, or a row id (1 or more)", s)
}

func (c *CLI) groupsCreateCmd() *cobra.Command {
	var o struct {
		version, at string
		ifNotExists bool
	}
	cmd := &cobra.Command{Use: "create STREAM GROUP --version N [--at earliest|latest|TIME|ID] [--if-not-exists]",
		Short: "Create a group at a version and position it before any consumer runs",
		Long: `create makes a consumer group bound to schema version N and positions its cursors, before any
consumer of it runs (as a Kafka offset reset creates a group). --at is earliest (the default: the
first retained row), latest (skip everything in the log now), an RFC 3339 time (the first row
produced at or after it is the next one read) or a row id (the next one read). The group reads
every routing key; a consumer that should read fewer registers with ConsumerOptions.Replace.

A group that exists is an error (move it with groups reset instead), unless --if-not-exists,
which leaves an existing group at version N as it is.`,
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if o.version == "" {
				return Usagef("groups create needs --version: the schema version the group reads (2 or v2)")
			}
			v, err := parseVersion(o.version)
			if err != nil {
				return err
			}
			pos, err := parseAt(o.at)
			if err != nil {
				return err
			}
			created, err := c.createGroup(ctx, args[0], args[1], v, pos, o.ifNotExists)
			if err != nil {
				return err
			}
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
			if created {
				c.note("created group %s of %s at v%d", args[1], args[0], v)
			} else {
				c.note("group %s of %s exists at v%d; left as it is (--if-not-exists)", args[1], args[0], v)
			}
			return c.writeDescription(d, h, view.Heartbeats(client))
		})}
	f := cmd.Flags()
	f.StringVar(&o.version, "version", "", "schema version the group reads (required)")
	f.StringVar(&o.at, "at", "earliest", "where the group starts: earliest, latest, an RFC 3339 time, or the next row id to read")
	f.BoolVar(&o.ifNotExists, "if-not-exists", false, "succeed, changing nothing, when the group exists at this version")
	return cmd
}

// createGroup creates the group through the driver contract's RegisterGroup,
// since core ties a group's version to a Go type (docs/decisions.md), then
// positions it. It reports whether it created the group; an existing one is
// errGroupExists unless ifNotExists, and one at another version is
// ErrGroupVersion either way.
func (c *CLI) createGroup(ctx context.Context, stream, group string, version int, pos groupPosition, ifNotExists bool) (bool, error) {
	client, s, err := c.raw(ctx, stream)
	if err != nil {
		return false, err
	}
	info, err := s.Get(ctx)
	if err != nil {
		return false, err
	}
	// Describe validates the name and tells an existing group apart.
	if _, err := s.Group(group).Describe(ctx); err != nil && !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		return false, err
	}
	// Update runs only for a group that exists, and changes nothing: the
	// decision is made here, after the call, since a driver may wrap an
	// error the callback returns.
	var existing *driver.GroupConfig
	_, err = client.Driver().RegisterGroup(ctx, driver.RegisterGroupParams{
		Group: driver.GroupConfig{StreamID: info.ID, Name: group, SchemaVersion: version, Start: driver.StartPosition(pos.start), CreatedAt: time.Now().UTC()},
		Update: func(stored driver.GroupConfig) (driver.GroupConfig, error) {
			existing = &stored
			return stored, nil
		}})
	switch {
	case err != nil:
		return false, fmt.Errorf("sqlstreams: create group %q of %q: %w", group, stream, err)
	case existing == nil:
	case existing.AllVersions || existing.SchemaVersion != version:
		return false, fmt.Errorf("sqlstreams: group %q of %q reads %s, not v%d: %w; pick another group name, or delete that group first ('sqlstreams groups delete %s %s')",
			group, stream, view.Reads(existing.AllVersions, existing.SchemaVersion), version, sqlstreams.ErrGroupVersion, stream, group)
	case !ifNotExists:
		return false, fmt.Errorf("sqlstreams: group %q of %q: %w; move its cursors with 'sqlstreams groups reset %s %s', or add --if-not-exists",
			group, stream, errGroupExists, stream, group)
	default:
		return false, nil
	}
	if pos.reset != nil {
		if _, err := s.Group(group).ResetCursors(ctx, sqlstreams.ResetOptions{To: *pos.reset}); err != nil {
			return true, fmt.Errorf("%w (group %q was created at the earliest position; groups reset moves it)", err, group)
		}
	}
	return true, nil
}
