package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// classify makes sure no raw driver error reaches a user: an error that
// carries none of the package's sentinels (a driver that forgot to wrap an
// engine error) becomes an ErrDatabase. Errors of the caller's own context
// pass through: the caller ended the call.
func classify(err error) error {
	if err == nil || driver.Classified(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	for _, s := range []error{ErrInvalidName, ErrInvalidOption, ErrInvalidMessage, ErrAlreadySettled, ErrIncompatibleSchema, ErrReadOnly, ErrNoRegistry,
		ErrSubjectNotFound, ErrSubjectVersionNotFound, ErrNotSoftDeleted, ErrReferenced, ErrNotEmpty, ErrRevisionNotFound, ErrSchemaInUse} {
		if errors.Is(err, s) {
			return err
		}
	}
	return driver.Wrap(ErrDatabase, err, "")
}

// SettleError reports the deliveries an Ack, Retry, Dead, Release or Extend
// could not apply to. The others in the same call were settled: one lost
// lease never changes another delivery's outcome. It matches ErrLeaseLost
// when Lost is not empty and ErrAlreadySettled when AlreadySettled is not.
type SettleError struct {
	Op     string // "ack", "retry", "dead", "release" or "extend"
	Stream string
	Group  string
	// Lost lists deliveries no longer leased to this consumer (the lease
	// expired and another member took them, or the row is gone): nothing
	// changed for them, and whoever holds them now decides their outcome.
	Lost []int64
	// AlreadySettled lists deliveries whose outcome had already been
	// recorded, or was being recorded by another call.
	AlreadySettled []int64
}

func (e *SettleError) Error() string {
	var parts []string
	if len(e.Lost) > 0 {
		parts = append(parts, fmt.Sprintf("%s for deliveries %s (their lease expired and another member may hold them, or their row is gone; nothing changed for them)",
			ErrLeaseLost, idList(e.Lost)))
	}
	if len(e.AlreadySettled) > 0 {
		parts = append(parts, fmt.Sprintf("%s: deliveries %s", ErrAlreadySettled, idList(e.AlreadySettled)))
	}
	return fmt.Sprintf("sqlstreams: %s for group %q on %q: %s", e.Op, e.Group, e.Stream, strings.Join(parts, "; "))
}

// Is matches ErrLeaseLost and ErrAlreadySettled.
func (e *SettleError) Is(target error) bool {
	return target == ErrLeaseLost && len(e.Lost) > 0 || target == ErrAlreadySettled && len(e.AlreadySettled) > 0
}

func idList(ids []int64) string {
	const show = 20
	s := make([]string, 0, min(len(ids), show))
	for _, id := range ids[:min(len(ids), show)] {
		s = append(s, fmt.Sprint(id))
	}
	out := strings.Join(s, ", ")
	if len(ids) > show {
		out += fmt.Sprintf(" and %d more", len(ids)-show)
	}
	return out
}

// settleErr returns nil when nothing was lost or already settled.
func settleErr(op string, g *group, lost, already []int64) error {
	if len(lost) == 0 && len(already) == 0 {
		return nil
	}
	slices.Sort(lost)
	slices.Sort(already)
	return &SettleError{Op: op, Stream: g.stream.Name, Group: g.name, Lost: lost, AlreadySettled: already}
}
