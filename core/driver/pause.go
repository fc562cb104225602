package driver

import (
	"context"
	"time"
)

// GroupPauser is implemented by drivers that let an operator pause a group
// cluster-wide, as River pauses a queue: while the group's PausedAt is set,
// every claim of every member fails with ErrGroupPaused (PlanClaim) and
// leases nothing; settles, extensions and health go on. It is optional:
// without it, pausing fails with ErrUnsupported and claims are as before.
type GroupPauser interface {
	// PauseGroup stores p.PausedAt as the group's (zero resumes it). It
	// first waits for the group's claims in flight, as a configuration
	// change does (C19), so that no claim that started before it commits
	// after it; it fails with ErrGroupNotFound when there is no such group.
	PauseGroup(ctx context.Context, p PauseGroupParams) error
}

// PauseGroupParams names the group and when it was paused (zero: resume).
type PauseGroupParams struct {
	StreamID int64
	Group    string
	PausedAt time.Time
}
