package sqlstreamscli_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The command runs inside any program: give it arguments, get an exit code.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "cli-example-")
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "app.db")
	run := func(stdout io.Writer, args ...string) int {
		cli := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: stdout, Stderr: os.Stdout})
		return cli.Execute(context.Background(), append([]string{"--url", url}, args...))
	}
	run(os.Stdout, "produce", "orders", "--version", "1", "--data", "{}")
	run(io.Discard, "streams", "create", "orders", "--partitions", "2")
	run(os.Stdout, "produce", "orders", "--version", "v1", "--key", "acct-1", "--data", `{"order_id":"A-1"}`)
	code := run(os.Stdout, "health", "orders", "--retirable", "v1")
	fmt.Println("exit", code)
	// Output:
	// sqlstreams: stream "orders": stream not found; 'sqlstreams streams list' lists the streams, 'sqlstreams streams create orders' makes one
	// ID
	// 1
	// stream orders (high-water id 1)
	// VERSION  ROWS  HEADS  GROUP  UNREAD  LEASED  DELAYED  DEAD
	// v1       1     0      -      -       -       -        -
	//
	// v1: retirable; no group reads version 1 (1 rows)
	//
	// v1 is retirable
	// exit 0
}

// A program adds its own commands next to the built-in ones (the web
// console registers itself this way); they share --url, -o and the exit
// codes.
func ExampleCLI_AddCommand() {
	dir, _ := os.MkdirTemp("", "cli-example-")
	defer os.RemoveAll(dir)
	cli := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: os.Stdout, Stderr: os.Stdout})
	cli.AddCommand(&cobra.Command{
		Use:   "count",
		Short: "Count the streams; exit 3 when there are none",
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := cli.Client(cmd.Context())
			if err != nil {
				return err
			}
			streams, err := client.Streams(cmd.Context())
			if err != nil {
				return err
			}
			if len(streams) == 0 {
				return sqlstreamscli.CheckFailedf("no streams yet")
			}
			_, err = fmt.Fprintln(cli.Stdout(), len(streams))
			return err
		},
	})
	code := cli.Execute(context.Background(), []string{"--url", "sqlite:" + filepath.Join(dir, "app.db"), "count"})
	fmt.Println("exit", code)
	// Output:
	// sqlstreams: no streams yet
	// exit 3
}

func ExampleExitCode() {
	fmt.Println(sqlstreamscli.ExitCode(nil), sqlstreamscli.ExitCode(errors.New("boom")),
		sqlstreamscli.ExitCode(sqlstreamscli.Usagef("bad flag")), sqlstreamscli.ExitCode(sqlstreamscli.CheckFailedf("not retirable")))
	// Output: 0 1 2 3
}

// A command added by a program writes JSON the way the built-in ones do:
// indented for -o json, one line for -o jsonl, and a table otherwise.
func ExampleCLI_WriteJSON() {
	cli := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: os.Stdout, Stderr: os.Stdout})
	cli.AddCommand(&cobra.Command{Use: "hello", RunE: func(cmd *cobra.Command, args []string) error {
		if cli.JSON() {
			return cli.WriteJSON(map[string]string{"greeting": "hello", "format": cli.Output()})
		}
		_, err := fmt.Fprintln(cli.Stdout(), "GREETING\nhello")
		return err
	}})
	cli.Execute(context.Background(), []string{"hello", "-o", "jsonl"})
	// Output: {"format":"jsonl","greeting":"hello"}
}

// Driver gives a command the database without opening a client, which
// would migrate it: what the migrate commands use.
func ExampleCLI_Driver() {
	dir, _ := os.MkdirTemp("", "cli-example-")
	defer os.RemoveAll(dir)
	cli := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: os.Stdout, Stderr: os.Stdout})
	cli.AddCommand(&cobra.Command{Use: "pending", RunE: func(cmd *cobra.Command, args []string) error {
		drv, err := cli.Driver()
		if err != nil {
			return err
		}
		applied, err := drv.AppliedMigrations(cmd.Context(), driver.AppliedMigrationsParams{})
		fmt.Println(drv.Name(), len(applied), "applied")
		return err
	}})
	cli.Execute(context.Background(), []string{"--url", "sqlite:" + filepath.Join(dir, "new.db"), "pending"})
	// Output: sqlite 0 applied
}

// Root is the cobra command, for a program that renames or documents the
// command it embeds.
func ExampleCLI_Root() {
	cli := sqlstreamscli.New(nil)
	cli.Root().Use = "myapp-streams"
	fmt.Println(cli.Root().Name())
	// Output: myapp-streams
}

// Usagef and CheckFailedf make the errors that exit 2 and 3.
func ExampleUsagef() {
	err := sqlstreamscli.Usagef("--since %q: write a duration such as 1h", "yesterday")
	fmt.Println(errors.Is(err, sqlstreamscli.ErrUsage), sqlstreamscli.ExitCode(err), err)
	// Output: true 2 --since "yesterday": write a duration such as 1h
}

func ExampleCheckFailedf() {
	err := sqlstreamscli.CheckFailedf("sqlstreams: %d consumers still on v1", 2)
	fmt.Println(errors.Is(err, sqlstreamscli.ErrCheckFailed), sqlstreamscli.ExitCode(err), err)
	// Output: true 3 sqlstreams: 2 consumers still on v1
}
