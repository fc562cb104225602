package sqlstreamscli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Shell completion and "did you mean": both need to know which positional
// argument of a command names a stream and which a group. The commands' Use
// lines say it (STREAM, NAME, OLD; GROUP), so one reading of them serves
// every command, the ones added later included.

type argKind int

const (
	argOther argKind = iota
	argStream
	argGroup
)

// argKinds reads what each positional argument of cmd names from its Use
// line. A name that a command makes (streams create NAME, groups create's
// GROUP) is not an existing one, so it completes to nothing.
func argKinds(cmd *cobra.Command) []argKind {
	kinds := argNames(cmd)
	if cmd.Name() == "create" {
		for i := range kinds {
			if i > 0 || cmd.Parent() != nil && cmd.Parent().Name() == "streams" {
				kinds[i] = argOther
			}
		}
	}
	return kinds
}

// argNames reads what each positional argument names, whether it exists or
// is being made.
func argNames(cmd *cobra.Command) []argKind {
	words := strings.Fields(cmd.Use)
	var kinds []argKind
	for _, w := range words[1:] {
		w = strings.Trim(w, "[]()|.")
		if strings.HasPrefix(w, "-") || w == "" {
			break
		}
		k := argOther
		switch w {
		case "STREAM", "NAME", "OLD":
			k = argStream
		case "GROUP":
			k = argGroup
		}
		kinds = append(kinds, k)
	}
	return kinds
}

// completeNames offers the streams, or a stream's groups, that match what
// is typed. It opens the client without migrating: completing a name must
// never change a database.
func (c *CLI) completeNames(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	kinds := argKinds(cmd)
	if len(args) >= len(kinds) || kinds[len(args)] == argOther {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	c.noMigrate = true
	client, err := c.Client(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var names []string
	if kinds[len(args)] == argStream {
		names, err = streamNames(ctx, client)
	} else if len(args) > 0 {
		names, err = groupNames(ctx, client, args[0])
	}
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, toComplete) }), cobra.ShellCompDirectiveNoFileComp
}

func streamNames(ctx context.Context, client *sqlstreams.Client) ([]string, error) {
	streams, err := client.Streams(ctx)
	names := make([]string, len(streams))
	for i, s := range streams {
		names[i] = s.Name
	}
	return names, err
}

func groupNames(ctx context.Context, client *sqlstreams.Client, stream string) ([]string, error) {
	groups, err := client.Stream[sqlstreams.RawPayload](stream).Groups(ctx)
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return names, err
}

// addCompletion gives every command that takes a stream or a group name
// the dynamic completion of those names.
func (c *CLI) addCompletion(cmd *cobra.Command) {
	if cmd.ValidArgsFunction == nil && slices.ContainsFunc(argKinds(cmd), func(k argKind) bool { return k != argOther }) {
		cmd.ValidArgsFunction = c.completeNames
	}
	for _, sub := range cmd.Commands() {
		c.addCompletion(sub)
	}
}

// subcommandArgs is the Args check of a command that only groups others: an
// argument is a mistyped subcommand, answered with the closest ones.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if s := closest(args[0], names); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	} else {
		msg += "; its commands are " + strings.Join(names, ", ")
	}
	return Usagef("%s", msg)
}

// closest returns the candidate nearest to name by edit distance, when it is
// near enough to be a typo (at most a third of the name's length, and 2 for
// short names: a swap of two letters), or "".
func closest(name string, candidates []string) string {
	best, bestD := "", max(2, len(name)/3)+1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if strings.HasPrefix(c, name) || strings.HasPrefix(name, c) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// didYouMean adds the closest existing name to an error for an unknown
// stream or group named on the command line.
func (c *CLI) didYouMean(ctx context.Context, cmd *cobra.Command, args []string, err error) error {
	if c.client == nil || ctx.Err() != nil {
		return err
	}
	kinds := argKinds(cmd)
	for i, k := range kinds {
		if i >= len(args) {
			break
		}
		var names []string
		var lerr error
		switch {
		case k == argStream && errors.Is(err, sqlstreams.ErrStreamNotFound):
			names, lerr = streamNames(ctx, c.client)
		case k == argGroup && errors.Is(err, sqlstreams.ErrGroupNotFound) && i > 0:
			names, lerr = groupNames(ctx, c.client, args[0])
		default:
			continue
		}
		if lerr != nil {
			return err
		}
		if s := closest(args[i], names); s != "" {
			return &hinted{err: err, hint: fmt.Sprintf("did you mean %s?", s)}
		}
		return err
	}
	return err
}

// hinted is an error with a hint after its message; it matches what err
// matches.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + " (" + h.hint + ")" }
func (h *hinted) Unwrap() error { return h.err }
