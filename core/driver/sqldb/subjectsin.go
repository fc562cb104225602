package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RecordIn is Record in the driver's transaction in, which every engine
// wraps alike: what counts is the last run's answer (a scope may run it
// again after a deadlock).
func (s Subjects[T]) RecordIn(ctx context.Context, in Scope, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var created bool
	v, err := Within(ctx, in, func(tx Runner) (v driver.SubjectVersion, err error) {
		v, created, err = s.Record(ctx, tx, p)
		return v, err
	})
	return v, created, err
}
