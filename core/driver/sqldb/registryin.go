package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RecordIn is Record in the driver's transaction in, as Subjects.RecordIn.
func (g Registry[T]) RecordIn(ctx context.Context, in Scope, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	return withinCreated(ctx, in, func(tx Runner) (driver.SchemaRevision, bool, error) { return g.Record(ctx, tx, p) })
}

// withinCreated is Within for a write that also reports whether it created
// what it returns, both from the last run.
func withinCreated[V any](ctx context.Context, in Scope, fn func(Runner) (V, bool, error)) (V, bool, error) {
	var created bool
	v, err := Within(ctx, in, func(tx Runner) (v V, err error) {
		v, created, err = fn(tx)
		return v, err
	})
	return v, created, err
}
