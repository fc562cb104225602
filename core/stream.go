package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Stream is a typed handle on a stream name. Producers and consumers made
// from it inherit T, so a handler cannot accept another payload type. Admin
// calls (Create, Get, Rename, Destroy, Health) take the name only and work
// the same on any T; use Stream[RawPayload] when no type is at hand.
type Stream[T Versioned] struct {
	client *Client
	name   string
}

// Name returns the stream name the handle was made with.
func (s *Stream[T]) Name() string { return s.name }

// StreamOptions configure a new stream. The zero value is one partition, not
// compacted, kept forever.
type StreamOptions struct {
	// Partitions is fixed at creation; default 1. Keyed messages go to
	// partition hash(key) mod Partitions; consumers of one group claim
	// different partitions concurrently.
	Partitions int
	// Compacted keeps only each key's head: the row with the greatest
	// (schema version, compaction rank, id). Every message needs a key.
	Compacted bool
	// Retention limits the log by age and row count, across all versions.
	Retention Retention
}

// Retention limits a stream's log. Zero values mean unlimited. By default
// retention removes only rows every group has passed and resolved, so nothing
// unread is lost; Hard removes regardless and Health counts what it removed
// unread.
type Retention struct {
	MaxAge  time.Duration
	MaxRows int64
	Hard    bool
}

// StreamInfo is a stream's configuration as stored.
type StreamInfo struct {
	ID         int64
	Name       string
	Partitions int
	Compacted  bool
	Retention  Retention
	CreatedAt  time.Time
}

func infoFrom(c driver.StreamConfig) StreamInfo {
	return StreamInfo{ID: c.ID, Name: c.Name, Partitions: c.Partitions, Compacted: c.Compacted,
		Retention: Retention(c.Retention), CreatedAt: c.CreatedAt}
}

// Streams lists every stream of the database, ordered by name.
func (c *Client) Streams(ctx context.Context) ([]StreamInfo, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	cfgs, err := c.drv.ListStreams(ctx, driver.ListStreamsParams{})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: list streams: %w", classify(err))
	}
	out := make([]StreamInfo, len(cfgs))
	for i, cfg := range cfgs {
		out[i] = infoFrom(cfg)
	}
	return out, nil
}

// MaxPartitions bounds StreamOptions.Partitions.
const MaxPartitions = 1024

// Create creates the stream. It fails with ErrStreamExists when the name is
// taken. Registering a producer or consumer creates a missing stream with
// default options, so Create is needed only for non-default options.
func (s *Stream[T]) Create(ctx context.Context, opts *StreamOptions) (StreamInfo, error) {
	cfg, err := s.create(ctx, opts)
	return infoFrom(cfg), err
}

func (s *Stream[T]) create(ctx context.Context, opts *StreamOptions) (driver.StreamConfig, error) {
	if err := s.client.checkOpen(); err != nil {
		return driver.StreamConfig{}, err
	}
	if err := validateName("stream", s.name); err != nil {
		return driver.StreamConfig{}, err
	}
	if opts == nil {
		opts = &StreamOptions{}
	}
	cfg := driver.StreamConfig{Name: s.name, Partitions: opts.Partitions, Compacted: opts.Compacted,
		Retention: driver.Retention(opts.Retention), CreatedAt: time.Now().UTC()}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	switch {
	case cfg.Partitions < 1 || cfg.Partitions > MaxPartitions:
		return cfg, fmt.Errorf("%w: stream %q: Partitions is %d; use 1 to %d", ErrInvalidOption, s.name, opts.Partitions, MaxPartitions)
	case opts.Retention.MaxAge < 0:
		return cfg, fmt.Errorf("%w: stream %q: Retention.MaxAge is negative; use 0 for no age limit", ErrInvalidOption, s.name)
	case opts.Retention.MaxRows < 0:
		return cfg, fmt.Errorf("%w: stream %q: Retention.MaxRows is negative; use 0 for no row limit", ErrInvalidOption, s.name)
	}
	created, err := s.client.drv.CreateStream(ctx, driver.CreateStreamParams{Config: cfg})
	if err != nil {
		if errors.Is(err, ErrStreamExists) {
			return created, fmt.Errorf("sqlstreams: stream %q: %w; use Get to read its options, or pick another name", s.name, err)
		}
		return created, fmt.Errorf("sqlstreams: create stream %q: %w", s.name, classify(err))
	}
	return created, nil
}

// ensure finds the stream or creates it with defaults, and says whether it
// created it.
func (s *Stream[T]) ensure(ctx context.Context) (driver.StreamConfig, bool, error) {
	cfg, err := s.lookup(ctx, false)
	if !errors.Is(err, ErrStreamNotFound) {
		return cfg, false, err
	}
	cfg, err = s.create(ctx, nil)
	if errors.Is(err, ErrStreamExists) { // another process won the race
		cfg, err = s.lookup(ctx, false)
		return cfg, false, err
	}
	return cfg, err == nil, err
}

// undoCreate removes a stream that a refused registration created, so that
// a refused call leaves nothing behind.
func (s *Stream[T]) undoCreate(ctx context.Context, cfg driver.StreamConfig, created bool) {
	if created {
		if err := s.client.drv.DestroyStream(context.WithoutCancel(ctx), driver.DestroyStreamParams{StreamID: cfg.ID}); err != nil {
			s.client.logger.Warn("sqlstreams: could not remove the stream a refused registration created", "stream", cfg.Name, "error", err)
		}
	}
}

// lookup finds the stream, creating it with defaults when create is set.
func (s *Stream[T]) lookup(ctx context.Context, create bool) (driver.StreamConfig, error) {
	if err := s.client.checkOpen(); err != nil {
		return driver.StreamConfig{}, err
	}
	if err := validateName("stream", s.name); err != nil {
		return driver.StreamConfig{}, err
	}
	cfg, err := s.client.drv.LookupStream(ctx, driver.LookupStreamParams{Name: s.name})
	if errors.Is(err, ErrStreamNotFound) && create {
		cfg, err = s.create(ctx, nil)
		if errors.Is(err, ErrStreamExists) { // another process won the race
			cfg, err = s.client.drv.LookupStream(ctx, driver.LookupStreamParams{Name: s.name})
		}
	}
	if err != nil {
		if errors.Is(err, ErrStreamNotFound) {
			return cfg, fmt.Errorf("sqlstreams: stream %q: %w; create it first or check the name", s.name, err)
		}
		return cfg, fmt.Errorf("sqlstreams: stream %q: %w", s.name, classify(err))
	}
	return cfg, nil
}

// Get returns the stream's configuration, or ErrStreamNotFound.
func (s *Stream[T]) Get(ctx context.Context) (StreamInfo, error) {
	cfg, err := s.lookup(ctx, false)
	return infoFrom(cfg), err
}

// Rename gives the stream a new name. Its id, rows, groups and cursors stay;
// the old name becomes free. Handles and producers made with the old name
// keep working with the stream they resolved; new handles need the new name.
func (s *Stream[T]) Rename(ctx context.Context, newName string) error {
	if err := validateName("stream", newName); err != nil {
		return err
	}
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return err
	}
	if err := s.client.drv.RenameStream(ctx, driver.RenameStreamParams{StreamID: cfg.ID, NewName: newName}); err != nil {
		if errors.Is(err, ErrStreamExists) {
			return fmt.Errorf("sqlstreams: rename stream %q to %q: %w; pick a free name", s.name, newName, err)
		}
		return fmt.Errorf("sqlstreams: rename stream %q: %w", s.name, classify(err))
	}
	return nil
}

// DeleteGroup removes a consumer group with its cursors, its unresolved and
// dead deliveries and its registered reader schemas: the last step of
// retiring a version, once Health shows the group has nothing left (and its
// consumers are stopped). The name is then free for a new group, at any
// version. It fails with ErrGroupNotFound when there is no such group.
func (s *Stream[T]) DeleteGroup(ctx context.Context, group string) error {
	if err := validateName("group", group); err != nil {
		return err
	}
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return err
	}
	if err := s.client.drv.DeleteGroup(ctx, driver.DeleteGroupParams{StreamID: cfg.ID, Group: group}); err != nil {
		if errors.Is(err, ErrGroupNotFound) {
			return fmt.Errorf("sqlstreams: stream %q has no group %q: %w", s.name, group, err)
		}
		return fmt.Errorf("sqlstreams: delete group %q of %q: %w", group, s.name, classify(err))
	}
	return nil
}

// Destroy removes the stream with its log, groups, cursors, exceptions and
// compaction heads. It cannot be undone.
func (s *Stream[T]) Destroy(ctx context.Context) error {
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return err
	}
	if err := s.client.drv.DestroyStream(ctx, driver.DestroyStreamParams{StreamID: cfg.ID}); err != nil {
		return fmt.Errorf("sqlstreams: destroy stream %q: %w", s.name, classify(err))
	}
	return nil
}

// StreamChanges says what Stream.Alter changes. A zero or nil field keeps
// what is stored.
type StreamChanges struct {
	// Partitions, when above zero, is the new partition count: the stored
	// one or more (up to MaxPartitions). New keyed messages then go to
	// PartitionForKey(key, Partitions), so a key may move to another
	// partition; its rows already written stay where they are.
	Partitions int
	// Compacted, when not nil, switches compaction on or off.
	Compacted *bool
	// Retention, when not nil, replaces the stream's limits whole.
	Retention *Retention
}

// Alter changes a stream that exists, for every process using it, and
// returns its configuration as stored after the change. What each change
// means for the rows already in the log:
//
//   - Partitions added: the new partitions start empty, and every group has
//     a cursor at their start, so no row written to them is missed. Keys
//     move only for messages produced after the change: a key's earlier rows
//     stay in its old partition. Order per key holds within each partition;
//     across the change, the key's rows in its old partition and in its new
//     one are claimed independently (see docs/contracts.md, C15, "Alter").
//     Producers and consumers in other processes learn the new count at
//     their next append or claim, which the driver refuses as stale and core
//     plans again, so no message is ever written with the old count once
//     the new one is stored.
//   - Compaction on: each key's head is computed from the log at once. Rows
//     that are not heads (superseded, and rows without a key) are no longer
//     claimable and go at the next maintenance; from now on every message
//     needs a key.
//   - Compaction off: every row is claimable and kept (subject to
//     retention) from now on; heads are no longer kept.
//   - Retention: the new limits apply from the next maintenance run
//     (Client.Maintain); a tightened limit then removes what it no longer
//     allows, a loosened one removes less from then on. Hard says whether
//     rows not yet read by every group may go.
//
// Partitions can only be added: fewer fails with ErrFewerPartitions. A
// call that changes nothing, or with values out of range, fails with
// ErrInvalidOption. A driver that cannot alter streams answers
// ErrUnsupported. Alter waits for appends and claims in flight on the stream.
func (s *Stream[T]) Alter(ctx context.Context, changes StreamChanges) (StreamInfo, error) {
	if err := checkChanges(s.name, changes); err != nil {
		return StreamInfo{}, err
	}
	alt, ok := s.client.drv.(driver.Alterer)
	if !ok {
		return StreamInfo{}, fmt.Errorf("sqlstreams: alter stream %q: the %s driver cannot alter streams: %w", s.name, s.client.drv.Name(), ErrUnsupported)
	}
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return StreamInfo{}, err
	}
	p := driver.AlterStreamParams{StreamID: cfg.ID, Partitions: changes.Partitions, Compacted: changes.Compacted}
	if changes.Retention != nil {
		r := driver.Retention(*changes.Retention)
		p.Retention = &r
	}
	out, err := alt.AlterStream(ctx, p)
	switch {
	case errors.Is(err, ErrFewerPartitions):
		return StreamInfo{}, fmt.Errorf("sqlstreams: alter stream %q: it has %d partitions, asked for %d: %w; keep %d or more, or create a new stream with fewer",
			s.name, cfg.Partitions, changes.Partitions, ErrFewerPartitions, cfg.Partitions)
	case err != nil:
		return StreamInfo{}, fmt.Errorf("sqlstreams: alter stream %q: %w", s.name, classify(err))
	}
	s.client.logger.Info("sqlstreams: stream altered", "stream", s.name, "partitions", out.Partitions, "compacted", out.Compacted,
		"max_age", out.Retention.MaxAge, "max_rows", out.Retention.MaxRows, "hard", out.Retention.Hard)
	return infoFrom(out), nil
}

// checkChanges refuses changes that change nothing or are out of range,
// before anything is read or written.
func checkChanges(name string, c StreamChanges) error {
	if err := validateName("stream", name); err != nil {
		return err
	}
	switch {
	case c.Partitions == 0 && c.Compacted == nil && c.Retention == nil:
		return fmt.Errorf("%w: stream %q: StreamChanges is empty; set Partitions, Compacted or Retention", ErrInvalidOption, name)
	case c.Partitions < 0 || c.Partitions > MaxPartitions:
		return fmt.Errorf("%w: stream %q: Partitions is %d; use 0 to keep the count, or up to %d", ErrInvalidOption, name, c.Partitions, MaxPartitions)
	case c.Retention != nil && c.Retention.MaxAge < 0:
		return fmt.Errorf("%w: stream %q: Retention.MaxAge is negative; use 0 for no age limit", ErrInvalidOption, name)
	case c.Retention != nil && c.Retention.MaxRows < 0:
		return fmt.Errorf("%w: stream %q: Retention.MaxRows is negative; use 0 for no row limit", ErrInvalidOption, name)
	}
	return nil
}
