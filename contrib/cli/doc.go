// Package sqlstreamscli is the sqlstreams command, embeddable: every
// operation an operator or a CI job needs, by stream and group name, with no
// Go type of the data.
//
// The binary is cmd/sqlstreams:
//
//	go install github.com/sqlstreams/sqlstreams/contrib/cli/cmd/sqlstreams@latest
//
// An application that wants the same commands inside its own binary (or
// more commands next to them) builds a CLI with New, adds its commands with
// AddCommand, and runs Execute:
//
//	cli := sqlstreamscli.New(nil)
//	cli.AddCommand(myCommand(cli)) // its RunE may call cli.Client(ctx)
//	os.Exit(cli.Execute(ctx, os.Args[1:]))
//
// Exit codes: 0 ok, 1 error, 2 usage (the command line does not parse, or
// a destructive command lacks --yes), 3 a check failed (an incompatible
// schema, a version that is not retirable, pending migrations), for CI gates.
package sqlstreamscli
