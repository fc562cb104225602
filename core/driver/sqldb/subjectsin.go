package sqldb

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RunnerScope runs fn in one of a driver's scopes (its own transaction, with
// its retries and error classification) on that scope's Runner; it may run
// fn more than once.
type RunnerScope func(fn func(Runner) error) error

// RecordIn is Record in the driver's transaction in, which every engine
// wraps alike: what counts is the last run's answer.
func (s Subjects[T]) RecordIn(ctx context.Context, in RunnerScope, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	err := in(func(tx Runner) error {
		var err error
		out, created, err = s.Record(ctx, tx, p)
		return err
	})
	return out, created, err
}
