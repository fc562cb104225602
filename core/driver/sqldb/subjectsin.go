package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RecordIn is Record in the driver's transaction in, which every engine
// wraps alike: what counts is the last run's answer (a scope may run it
// again after a deadlock).
func (s Subjects[T]) RecordIn(ctx context.Context, in Scope, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return withinCreated(ctx, in, func(tx Runner) (driver.SubjectVersion, bool, error) { return s.Record(ctx, tx, p) })
}
