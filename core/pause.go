package sqlstreams

import (
	"context"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Pause stops every member of the group, in every process, from claiming,
// as River pauses a queue: once it returns, their claims (Claim,
// AckAndClaim, Run) get nothing, as from an empty stream, until Resume.
// Deliveries already leased go on: their handlers finish, settle and
// extend as usual. It waits for claims in flight to commit first. Pausing
// a paused group keeps its first pause time. It fails with ErrGroupNotFound
// when there is no such group, and with ErrUnsupported when the driver
// cannot pause groups.
func (g *GroupAdmin) Pause(ctx context.Context) error {
	return g.setPaused(ctx, time.Now().UTC().Truncate(time.Microsecond), "pause")
}

// Resume lets the group's members claim again after Pause; running
// consumers take up work at their next poll.
func (g *GroupAdmin) Resume(ctx context.Context) error {
	return g.setPaused(ctx, time.Time{}, "resume")
}

func (g *GroupAdmin) setPaused(ctx context.Context, at time.Time, op string) error {
	pauser, ok := g.client.drv.(driver.GroupPauser)
	if !ok {
		return fmt.Errorf("sqlstreams: %s group %q: %w: the %s driver cannot pause groups", op, g.name, ErrUnsupported, g.client.drv.Name())
	}
	cfg, err := g.resolveGroup(ctx)
	if err != nil {
		return err
	}
	if !at.IsZero() {
		d, err := g.Describe(ctx)
		if err != nil {
			return err
		}
		if !d.PausedAt.IsZero() {
			return nil // paused already: the first pause time stands
		}
	}
	if err := pauser.PauseGroup(ctx, driver.PauseGroupParams{StreamID: cfg.ID, Group: g.name, PausedAt: at}); err != nil {
		return g.wrap(op, err)
	}
	return nil
}
