package driver

import (
	"cmp"
	"context"
)

// PartitionSteps are one engine's statements for the main claim of one
// partition, run in the claim's transaction while it holds the partition's
// cursor (ClaimPartition).
type PartitionSteps interface {
	// Pending reports whether the partition has a delivery out (a leased
	// or delayed exception, or a batch): an ordered group takes nothing
	// more from it until that is settled.
	Pending(ctx context.Context) (bool, error)
	// ReadWindow reads up to size rows past from in id order, handing
	// each to s.Inspect until s is done, and returns how many rows the
	// window held (PartitionScan.ReadWindows).
	ReadWindow(ctx context.Context, from int64, size int, s *PartitionScan) (int, error)
	// Record moves the group's cursor to s.Cursor, leases what s took as
	// one batch (passing over rows the group already has an exception
	// for, when the engine's read did not) and leaves the rows s deferred
	// due for members that decode them. It returns the deliveries it
	// leased and how many rows it deferred.
	Record(ctx context.Context, s *PartitionScan) ([]Delivery, int, error)
}

// PartitionClaim is the main claim of one partition.
type PartitionClaim struct {
	Params ClaimParams
	Plan   ClaimPlan
	// Cursor is the group's position in the partition, as the claim's
	// transaction holds it.
	Cursor int64
	// Limit is the most rows to take.
	Limit int
	// FirstWindow is the size of the first window read (FirstWindow for
	// an engine that reads a window whole, MaxClaimWindow for one that
	// steps rows in the process).
	FirstWindow int
	// Bound is the most rows to look at (0: MaxClaimScan), less for an
	// engine that reads on in the same claim past rows its record passed
	// over.
	Bound int
}

// ClaimPartition is the main claim of one partition, the same on every
// engine: an ordered group's partition with a delivery out gives nothing;
// otherwise the rows past the cursor are read in windows and judged by
// PartitionScan, and what the scan looked at is recorded: cursor, batch,
// deferred rows. It returns the deliveries and how many rows it deferred.
func ClaimPartition(ctx context.Context, steps PartitionSteps, c PartitionClaim) ([]Delivery, int, error) {
	if c.Params.Ordered {
		if pending, err := steps.Pending(ctx); err != nil || pending {
			return nil, 0, err
		}
	}
	s := &PartitionScan{Plan: c.Plan, Ordered: c.Params.Ordered, Limit: c.Limit, LeaseUntil: c.Params.LeaseUntil, Cursor: c.Cursor}
	more, err := s.ReadWindows(c.FirstWindow, cmp.Or(c.Bound, MaxClaimScan), func(from int64, size int) (int, error) {
		return steps.ReadWindow(ctx, from, size, s)
	})
	s.More = more
	if err != nil || s.Cursor == c.Cursor {
		return nil, 0, err
	}
	return steps.Record(ctx, s)
}
