package sqlstreamscli

import (
	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// EnvRegistryPassword holds the basic-auth password of `sqlstreams registry
// serve --basic-auth USER`, read from the environment for the same reason
// as EnvConsolePassword.
const EnvRegistryPassword = "SQLSTREAMS_REGISTRY_PASSWORD"

func (c *CLI) registryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "registry", Short: "Serve the schema registry to Kafka tooling", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	var (
		listen, user, policyName string
		valueAlias               bool
	)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Confluent-compatible schema registry API until interrupted",
		Long: `serve answers the Confluent Schema Registry REST API on --listen (Confluent's default
port is 8081) until SIGINT or SIGTERM: subject {stream}-v{version}, subject version =
revision, one global id per schema. JSON, AVRO and PROTOBUF documents are accepted and judged
by their own rules, as the schema commands do (the CLI's client enables every type).
Registrations pass the same gate as a Go producer's; --policy picks JSON Schema's rules:
goaware (the default, for streams read by Go consumers) or strict (Confluent's rules, for
readers in other languages).

--basic-auth USER asks for a user and the password in $` + EnvRegistryPassword + `
(what sr.BasicAuth and the Java client's basic.auth.user.info send).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.output != "table" {
				return Usagef("registry serve has no -o %s output", c.output)
			}
			password := c.opts.Getenv(EnvRegistryPassword)
			if user != "" && password == "" {
				return Usagef("--basic-auth %s needs the password in $%s", user, EnvRegistryPassword)
			}
			policy, err := parsePolicy(policyName)
			if err != nil {
				return err
			}
			// The formats come with c.Client, as for every command: ccompat
			// keeps a client's formats, so they are enabled in one place.
			c.opts.ClientOptions = append(c.opts.ClientOptions, sqlstreams.WithDocumentPolicy(policy))
			ctx := cmd.Context()
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			opts := &ccompat.Options{ValueAlias: valueAlias, Logger: c.logger()}
			if user != "" {
				opts.BasicAuth = &ccompat.BasicAuth{User: user, Password: password}
			}
			return c.serve(ctx, "registry", listen, "", "Confluent-compatible API", user != "", ccompat.NewHandler(client, opts))
		},
	}
	f := serve.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8081", "address to serve on (port 0 picks a free one)")
	f.StringVar(&user, "basic-auth", "", "ask for this user, with the password in $"+EnvRegistryPassword)
	f.StringVar(&policyName, "policy", "goaware", "rules for the documents clients register: goaware (as Go consumers decode) or strict (Confluent's)")
	f.BoolVar(&valueAlias, "value-alias", false, "also serve {stream}-value as a read-only alias of the highest version (TopicNameStrategy)")
	cmd.AddCommand(serve)
	return cmd
}
