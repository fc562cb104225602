package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The dead-letter operations run in a Directory's scopes too: the list in
// Read, Replay and Discard (one statement each, atomic on its own) in
// Write. A driver that reads otherwise defines its own ListDead, which
// takes precedence over the embedded one.

// ListDead implements driver.Driver.ListDead (Store.ListDead).
func (d Directory[T]) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	return In(ctx, d.Read, d.Store.ListDead, p)
}

// Replay implements driver.Driver.Replay (Store.Replay).
func (d Directory[T]) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return In(ctx, d.Write, d.Store.Replay, p)
}

// Discard implements driver.Driver.Discard (Store.Discard).
func (d Directory[T]) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return In(ctx, d.Write, d.Store.Discard, p)
}
