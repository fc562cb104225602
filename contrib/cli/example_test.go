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
	// sqlstreams: stream "orders": stream not found; create it first or check the name
	// ID
	// 1
	// stream orders (high-water id 1)
	// VERSION  ROWS  HEADS  GROUP  UNREAD  LEASED  DELAYED  DEAD  DISTANCE  VERDICT
	// v1       1     0      -      -       -       -        -     -         retirable; no group reads version 1 (1 rows)
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
