package driver

import (
	"context"
	"errors"
	"fmt"
)

// Alterer is implemented by drivers that can change a stream after it was
// created (Stream.Alter). It is optional, as ClientDirectory is: a driver
// without it meets every other contract, and Stream.Alter answers
// ErrUnsupported for it.
//
// Producers and consumers keep a copy of the stream's configuration, so a
// change must reach the ones that run in other processes with their old
// copy. Every change moves StreamConfig.Generation on, and a driver that
// implements Alterer refuses an Append or a Claim made with another
// generation than the stored one, inside the transaction that holds the
// locks the change takes, with a *StreamChangedError carrying the stored
// configuration; package sqlstreams then plans again with it (a producer
// re-hashes its keys over the new partition count) and retries. So no row is
// written with a stale partition count or compaction setting, and no claim
// filters with one.
type Alterer interface {
	// AlterStream applies p to the stored configuration and returns the
	// result. It takes the locks appends take on every partition (waiting for
	// appends in flight, bounded as theirs are) and the cursors of every
	// group (waiting for claims in flight), then: adds partitions with a
	// cursor per group at the partition's start, so that no row of a new
	// partition is passed over; builds each key's compaction head from the
	// log when compaction is switched on, and drops the heads when it is
	// switched off; stores the limits; and moves Generation on. A partition
	// count below the stored one fails with ErrFewerPartitions and changes
	// nothing; a missing stream fails with ErrStreamNotFound.
	AlterStream(ctx context.Context, p AlterStreamParams) (StreamConfig, error)
}

// AlterStreamParams names a stream and what to change; a zero or nil field
// keeps what is stored.
type AlterStreamParams struct {
	StreamID int64
	// Partitions, when above zero, is the new partition count: at least the
	// stored one (equal changes nothing).
	Partitions int
	// Compacted, when not nil, switches compaction on or off.
	Compacted *bool
	// Retention, when not nil, replaces the stored limits.
	Retention *Retention
}

// ErrFewerPartitions: a stream's partition count can only grow. Removing a
// partition would strand its rows and cursors and move keys that already
// have rows there, breaking their order.
var ErrFewerPartitions = errors.New("a stream's partitions can only be added, never removed")

// ErrStreamChanged: the stream was altered after the caller read its
// configuration. Package sqlstreams handles it (plans again and retries); it
// reaches a user only when the stream keeps changing under a call.
var ErrStreamChanged = errors.New("stream configuration changed")

// StreamChangedError is the error an Append or Claim made with a stale
// configuration returns: nothing was written or leased, and Current is the
// stored configuration to plan again with.
type StreamChangedError struct {
	Current StreamConfig
}

func (e *StreamChangedError) Error() string {
	return fmt.Sprintf("stream %d was altered (generation %d): %v", e.Current.ID, e.Current.Generation, ErrStreamChanged)
}

// Unwrap makes the error match ErrStreamChanged.
func (e *StreamChangedError) Unwrap() error { return ErrStreamChanged }

// Stale returns a *StreamChangedError when the configuration a call was made
// with (used) is not of the stored one's generation, nil otherwise. Drivers
// call it with the configuration they read under the locks AlterStream
// takes.
func Stale(used, stored StreamConfig) error {
	if used.Generation == stored.Generation {
		return nil
	}
	return &StreamChangedError{Current: stored}
}

// Altered returns what stored becomes under p, or ErrFewerPartitions;
// drivers call it with the configuration they read under their locks, so
// that every engine decides alike.
func Altered(stored StreamConfig, p AlterStreamParams) (StreamConfig, error) {
	out := stored
	if p.Partitions > 0 {
		if p.Partitions < stored.Partitions {
			return stored, fmt.Errorf("stream %d has %d partitions, asked for %d: %w", stored.ID, stored.Partitions, p.Partitions, ErrFewerPartitions)
		}
		out.Partitions = p.Partitions
	}
	if p.Compacted != nil {
		out.Compacted = *p.Compacted
	}
	if p.Retention != nil {
		out.Retention = *p.Retention
	}
	out.Generation++
	return out, nil
}

// Alter is AlterStream's sequence, run in the engine's transaction between
// its two steps: stored takes the engine's locks and reads the
// configuration, Altered decides what it becomes under p, and store writes
// next over it. An alteration Altered refuses (ErrFewerPartitions) is the
// caller's (a CallerError), so that the engine's transaction hands it back
// as it is, unclassified and not retried.
func Alter(p AlterStreamParams, stored func() (StreamConfig, error), store func(stored, next StreamConfig) error) (StreamConfig, error) {
	was, err := stored()
	if err != nil {
		return StreamConfig{}, err
	}
	next, err := Altered(was, p)
	if err != nil {
		return StreamConfig{}, CallerError{Err: err}
	}
	return next, store(was, next)
}

// CheckGeneration returns nil when gen, the generation a driver read under
// the locks AlterStream takes, is the one the call was planned with (used),
// and otherwise the *StreamChangedError for the stored configuration, which
// lookup reads (only then, so the usual path costs no extra read).
func CheckGeneration(used StreamConfig, gen int64, lookup func() (StreamConfig, error)) error {
	if gen == used.Generation {
		return nil
	}
	stored, err := lookup()
	if err != nil {
		return err
	}
	return Stale(used, stored)
}

// StaleOrGone explains an append whose guard found fewer partitions at the
// planned generation than it writes to: the stream was altered (a
// *StreamChangedError) or destroyed (ErrStreamNotFound). lookup reads the
// stored configuration.
func StaleOrGone(used StreamConfig, lookup func() (StreamConfig, error)) error {
	stored, err := lookup()
	if err != nil {
		return err
	}
	if err := Stale(used, stored); err != nil {
		return err
	}
	return fmt.Errorf("stream %d lacks a partition written to: %w", used.ID, ErrStreamNotFound)
}

// AlterConflict is the error of the stream's AlterStream that failed with
// err, the engine's classified error, or nil: it names the stream, and adds
// advice when the lock wait ran out (an ErrConflict *Error without advice of
// its own).
func AlterConflict(streamID int64, err error) error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) && de.Kind == ErrConflict && de.Advice == "" {
		de.Advice = "appends, claims or maintenance of this stream held their locks longer than the lock timeout (an open ProduceTx?); nothing was changed, retry the alter"
	}
	return fmt.Errorf("alter stream %d: %w", streamID, err)
}
