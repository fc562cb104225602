package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The migrate commands never open a client, which would migrate: they work
// on the driver alone.
func (c *CLI) migrator() (*sqlstreams.Migrator, driver.Driver, error) {
	drv, err := c.Driver()
	if err != nil {
		return nil, nil, err
	}
	return sqlstreams.NewMigrator(drv), drv, nil
}

func (c *CLI) migrateCmd() *cobra.Command {
	return group("migrate", "List, apply, export and validate the database schema's migrations", c.migrateListCmd(), c.migrateUpCmd(),
		c.migrateGetCmd(), c.migrateValidateCmd())
}

func (c *CLI) migrateListCmd() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List the driver's migrations and which are applied", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			m, drv, err := c.migrator()
			if err != nil {
				return err
			}
			ms, err := m.List(ctx)
			if err != nil {
				return err
			}
			if c.JSON() {
				type mig struct {
					Version    int     `json:"version"`
					Name       string  `json:"name"`
					Applied    bool    `json:"applied"`
					AppliedAt  *string `json:"applied_at"`
					Reversible bool    `json:"reversible"`
				}
				out := struct {
					Driver     string `json:"driver"`
					Migrations []mig  `json:"migrations"`
				}{drv.Name(), []mig{}}
				for _, mg := range ms {
					out.Migrations = append(out.Migrations, mig{mg.Version, mg.Name, mg.Applied, jsonTime(mg.AppliedAt), mg.Reversible})
				}
				return c.WriteJSON(out)
			}
			tw := c.table()
			fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED-AT\tREVERSIBLE")
			for _, mg := range ms {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%t\n", mg.Version, mg.Name, tableTime(mg.AppliedAt), mg.Reversible)
			}
			return tw.Flush()
		})}
}

func (c *CLI) migrateUpCmd() *cobra.Command {
	var up struct {
		dryRun, showSQL bool
		target          int
	}
	upCmd := &cobra.Command{Use: "up [--dry-run] [--show-sql] [--target-version N]", Short: "Apply pending migrations", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			m, drv, err := c.migrator()
			if err != nil {
				return err
			}
			steps, err := m.Migrate(ctx, sqlstreams.MigrateOptions{TargetVersion: up.target, DryRun: up.dryRun})
			if c.JSON() {
				type step struct {
					Version    int     `json:"version"`
					Name       string  `json:"name"`
					DurationMS float64 `json:"duration_ms"`
					SQL        string  `json:"sql,omitempty"`
				}
				out := struct {
					Driver string `json:"driver"`
					DryRun bool   `json:"dry_run"`
					Steps  []step `json:"steps"`
				}{drv.Name(), up.dryRun, []step{}}
				for _, s := range steps {
					st := step{Version: s.Version, Name: s.Name, DurationMS: float64(s.Duration.Microseconds()) / 1000}
					if up.showSQL {
						st.SQL = s.SQL
					}
					out.Steps = append(out.Steps, st)
				}
				if werr := c.WriteJSON(out); err == nil {
					err = werr
				}
				return err
			}
			if len(steps) == 0 && err == nil {
				_, err := fmt.Fprintf(c.opts.Stdout, "%s: no migrations pending\n", drv.Name())
				return err
			}
			for _, s := range steps {
				verb := "applied"
				if up.dryRun {
					verb = "would apply"
				}
				fmt.Fprintf(c.opts.Stdout, "%s %d %s\n", verb, s.Version, s.Name)
				if up.showSQL {
					fmt.Fprintln(c.opts.Stdout, strings.TrimRight(s.SQL, "\n"))
					fmt.Fprintln(c.opts.Stdout)
				}
			}
			return err
		})}
	upCmd.Flags().BoolVar(&up.dryRun, "dry-run", false, "print the plan without applying it")
	upCmd.Flags().BoolVar(&up.showSQL, "show-sql", false, "print each step's SQL")
	upCmd.Flags().IntVar(&up.target, "target-version", 0, "migrate up to this version (default the latest)")
	return upCmd
}

func (c *CLI) migrateGetCmd() *cobra.Command {
	var get struct {
		versions  []int
		all       bool
		drv       string
		dir       string
		noRecords bool
	}
	getCmd := &cobra.Command{Use: "get (--version N... | --all) [--driver postgres|mysql|sqlite] [--dir DIR]",
		Short: "Print (or write to files) the migrations' SQL, for goose, atlas, flyway or a DBA",
		Long: `get prints the SQL of migrations without touching a database. --driver names the engine (or --url
does). Each migration is followed by the statement that records it in sqlstreams_migration, which
--no-migrate and migrate validate read; --no-records leaves it out.

With --dir, each migration is written to its own file, as embedded in the driver (0001_init.sql,
0002_registry.down.sql, …), and the record statements to NNNN_name.record.sql.`,
		Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if get.all == (len(get.versions) > 0) {
				return Usagef("migrate get takes --version N (repeatable) or --all")
			}
			drv, closeDrv, err := c.exportDriver(get.drv)
			if err != nil {
				return err
			}
			defer closeDrv()
			ms, err := sqlstreams.NewMigrator(drv).Migrations()
			if err != nil {
				return err
			}
			pick := ms
			if !get.all {
				if pick, err = pickMigrations(drv.Name(), ms, get.versions); err != nil {
					return err
				}
			}
			if get.dir != "" {
				return writeMigrationFiles(get.dir, pick, !get.noRecords)
			}
			_, err = fmt.Fprint(c.opts.Stdout, migrationSQL(drv.Name(), pick, !get.noRecords))
			return err
		})}
	gf := getCmd.Flags()
	gf.IntSliceVar(&get.versions, "version", nil, "migration version (repeatable)")
	gf.BoolVar(&get.all, "all", false, "every migration")
	gf.StringVar(&get.drv, "driver", "", "postgres, mysql or sqlite (default: the --url's driver)")
	gf.StringVar(&get.dir, "dir", "", "write one file per migration into this directory")
	gf.BoolVar(&get.noRecords, "no-records", false, "leave out the statements that record migrations as applied")
	return getCmd
}

// exportDriver is the driver migrate get prints the SQL of: the engine
// named by --driver, which needs no database, or else the --url's. The
// returned func closes a driver opened here.
func (c *CLI) exportDriver(name string) (driver.Driver, func(), error) {
	switch {
	case name != "":
		drv, err := dsn.ForName(name)
		if err != nil {
			return nil, nil, Usagef("--driver: %v", err)
		}
		return drv, func() { drv.Close() }, nil
	case c.url != "" || c.opts.Getenv(EnvURL) != "":
		drv, err := c.Driver()
		if err != nil {
			return nil, nil, err
		}
		return drv, func() {}, nil
	}
	return nil, nil, Usagef("migrate get needs --driver (postgres, mysql or sqlite) or --url")
}

// pickMigrations returns the migrations of ms with the given versions, in
// the order asked for; a version the driver lacks is a usage error.
func pickMigrations(driverName string, ms []driver.Migration, versions []int) ([]driver.Migration, error) {
	var pick []driver.Migration
	for _, v := range versions {
		i := slices.IndexFunc(ms, func(m driver.Migration) bool { return m.Version == v })
		if i < 0 {
			return nil, Usagef("the %s driver has no migration %d", driverName, v)
		}
		pick = append(pick, ms[i])
	}
	return pick, nil
}

// migrationSQL is one script of the migrations, each headed by a comment
// naming it and, with records, followed by the statement that records it
// as applied, so that it can be run by hand or by another tool.
func migrationSQL(driverName string, ms []driver.Migration, records bool) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "-- sqlstreams %s migration %d: %s\n%s", driverName, m.Version, m.Name, m.Up)
		if !strings.HasSuffix(m.Up, "\n") {
			b.WriteString("\n")
		}
		if records {
			fmt.Fprintf(&b, "-- record migration %d as applied\n%s", m.Version, m.Record)
			if !strings.HasSuffix(m.Record, "\n") {
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (c *CLI) migrateValidateCmd() *cobra.Command {
	return &cobra.Command{Use: "validate", Short: "Exit 3 when migrations are pending", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			m, drv, err := c.migrator()
			if err != nil {
				return err
			}
			err = m.Validate(ctx)
			var out *sqlstreams.SchemaOutdatedError
			pending := []int{}
			switch {
			case errors.As(err, &out):
				pending = out.Pending
			case err != nil:
				return err
			}
			if c.JSON() {
				if err := c.WriteJSON(map[string]any{"driver": drv.Name(), "current": len(pending) == 0, "pending": pending}); err != nil {
					return err
				}
			} else if len(pending) == 0 {
				fmt.Fprintf(c.opts.Stdout, "%s: the schema is current\n", drv.Name())
			}
			if len(pending) > 0 {
				return &tagged{tag: ErrCheckFailed, msg: out.Error()}
			}
			return nil
		})}
}

func writeMigrationFiles(dir string, ms []driver.Migration, records bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sqlstreams: %w", err)
	}
	write := func(name, body string) error {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("sqlstreams: %w", err)
		}
		return nil
	}
	for _, m := range ms {
		base := strings.TrimSuffix(m.Name, ".sql")
		if err := write(m.Name, m.Up); err != nil {
			return err
		}
		if m.Down != "" {
			if err := write(base+".down.sql", m.Down); err != nil {
				return err
			}
		}
		if records {
			if err := write(base+".record.sql", m.Record); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *CLI) maintainCmd() *cobra.Command {
	return &cobra.Command{Use: "maintain", Short: "Run retention and compaction once on every stream", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			r, err := client.Maintain(ctx)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.WriteJSON(map[string]int64{"compacted": r.Compacted, "retained": r.Retained, "removed_unread": r.RemovedUnread})
			}
			tw := c.table()
			fmt.Fprintf(tw, "COMPACTED\tRETAINED\tREMOVED-UNREAD\n%d\t%d\t%d\n", r.Compacted, r.Retained, r.RemovedUnread)
			return tw.Flush()
		})}
}

func (c *CLI) versionCmd() *cobra.Command {
	return &cobra.Command{Use: "version", Short: "Print the sqlstreams and Go versions", Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			v, core := c.opts.Version, "(devel)"
			if v == "" {
				v, core = versions()
			}
			if c.JSON() {
				return c.WriteJSON(map[string]string{"version": v, "core_version": core, "go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintf(c.opts.Stdout, "sqlstreams %s (core %s, %s %s/%s)\n", v, core, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		})}
}
