// Command sqlstreams operates the streams of a sqlstreams database by name:
// streams, health and retirement gates, consumer groups and their cursors,
// dead letters, the log, schemas and migrations.
//
//	go install github.com/sqlstreams/sqlstreams/contrib/cli/cmd/sqlstreams@latest
//	sqlstreams --url sqlite:app.db health orders.placed
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cli := sqlstreamscli.New(nil)
	// Commands built outside this module register here with cli.AddCommand;
	// their RunE gets the client from cli.Client(cmd.Context()).
	code := cli.Execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
