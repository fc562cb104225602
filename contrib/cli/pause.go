package sqlstreamscli

import (
	"context"

	"github.com/spf13/cobra"
)

// groupsPauseCmds are `groups pause` and `groups resume`.
func (c *CLI) groupsPauseCmds() (pause, resume *cobra.Command) {
	pause = &cobra.Command{Use: "pause STREAM GROUP", Short: "Stop every member of a group, in every process, from claiming until resume",
		Long: `pause stops every member of the group from claiming, cluster-wide, as River pauses a queue: once it
returns, their claims get nothing. Deliveries already leased finish and settle as usual, other groups
are untouched, and groups describe shows when it was paused. Pausing a paused group keeps its first
pause time.`,
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			if err := s.Group(args[1]).Pause(ctx); err != nil {
				return err
			}
			return c.done(map[string]any{"stream": args[0], "paused_group": args[1]}, "paused group %s of %s; groups resume %s %s lets it claim again",
				args[1], args[0], args[0], args[1])
		})}
	resume = &cobra.Command{Use: "resume STREAM GROUP", Short: "Let a paused group's members claim again",
		Args: cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			_, s, err := c.raw(ctx, args[0])
			if err != nil {
				return err
			}
			if err := s.Group(args[1]).Resume(ctx); err != nil {
				return err
			}
			return c.done(map[string]any{"stream": args[0], "resumed_group": args[1]}, "resumed group %s of %s: its members claim at their next poll",
				args[1], args[0])
		})}
	return pause, resume
}
