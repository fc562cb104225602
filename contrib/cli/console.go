package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/sqlstreams/sqlstreams/contrib/console"
)

// EnvConsolePassword holds the basic-auth password of `sqlstreams console
// --basic-auth USER`. It is read from the environment, never from a flag,
// so that it does not show in the process list or the shell history.
const EnvConsolePassword = "SQLSTREAMS_CONSOLE_PASSWORD"

// serveShutdown bounds how long a server command waits for requests in
// flight once it is told to stop.
const serveShutdown = 10 * time.Second

func (c *CLI) consoleCmd() *cobra.Command {
	var (
		listen, prefix, user string
		allowActions         bool
		chartRefresh         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console over this database until interrupted",
		Long: `console serves the web console (streams, health and retirement, groups, dead letters,
messages, schemas) on --listen until SIGINT or SIGTERM.

It is read-only unless --allow-actions is given. --basic-auth USER asks for a user
and the password in $` + EnvConsolePassword + `; anything beyond that (SSO, TLS) is
the job of a proxy in front of it. The address it listens on is printed on stderr.`,
		Args: cobra.NoArgs,
		// Not wrapped in c.run: --timeout bounds each database call the
		// console makes (console.Options.RequestTimeout), not the server.
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.output != "table" {
				return Usagef("console has no -o %s output", c.output)
			}
			if prefix != "" && (!strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/")) {
				return Usagef("--prefix %q: start it with / and end it without one, as in /console", prefix)
			}
			password := c.opts.Getenv(EnvConsolePassword)
			if user != "" && password == "" {
				return Usagef("--basic-auth %s needs the password in $%s", user, EnvConsolePassword)
			}
			ctx := cmd.Context()
			client, err := c.Client(ctx)
			if err != nil {
				return err
			}
			h, err := console.New(client, console.Options{Prefix: prefix, AllowActions: allowActions, Logger: c.logger(), RequestTimeout: c.timeout,
				ChartRefresh: chartRefresh})
			if err != nil {
				return Usagef("%v", err)
			}
			if user != "" {
				h = console.BasicAuth(h, user, password)
			}
			mode := "read-only"
			if allowActions {
				mode = "actions allowed"
			}
			return c.serve(ctx, "console", listen, prefix, mode, user != "", h)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve on (port 0 picks a free one)")
	f.StringVar(&prefix, "prefix", "", "path prefix to serve under, as in /console")
	f.BoolVar(&allowActions, "allow-actions", false, "allow replay, discard, cursor resets, group deletion and registry settings")
	f.StringVar(&user, "basic-auth", "", "ask for this user, with the password in $"+EnvConsolePassword)
	f.DurationVar(&chartRefresh, "chart-refresh", 0, "how often an open stream page redraws its activity charts (default 30s)")
	return cmd
}

// serve serves h on listen (under prefix) until ctx ends, then shuts down
// within serveShutdown. It prints the address it listens on, so that
// --listen 127.0.0.1:0 is usable, and warns when a server without
// authentication listens beyond loopback.
func (c *CLI) serve(ctx context.Context, what, listen, prefix, mode string, authenticated bool, h http.Handler) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w; pick a free address with --listen", what, listen, err)
	}
	if host, _, _ := net.SplitHostPort(listen); !authenticated && !isLoopback(host) {
		c.note("warning: the %s listens on %s without --basic-auth; put authentication in front of it", what, listen)
	}
	c.note("%s: http://%s%s/ (%s); interrupt to stop", what, ln.Addr(), prefix, mode)

	mux := http.NewServeMux()
	if prefix == "" {
		mux.Handle("/", h)
	} else {
		mux.Handle(prefix+"/", h)
		mux.Handle(prefix, http.RedirectHandler(prefix+"/", http.StatusFound))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("%s: %w", what, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdown)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("%s: stop: %w", what, err)
	}
	c.note("%s: stopped", what)
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
