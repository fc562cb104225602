package memdriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Store is the data of an in-memory "database": streams, their logs,
// groups, deliveries and the schema registry. It is safe for concurrent use
// by the drivers opened on it.
type Store struct {
	// writer is the single writer's lock: a token in the channel is the
	// lock taken, so that a wait for it can end (context, busy timeout).
	writer chan struct{}
	mu     sync.RWMutex // guards committed and closed
	// committed is the data every reader sees. Writes of the driver's own
	// transactions change it in place under mu; a caller transaction works
	// on a copy and swaps it in at Commit.
	committed *db
	closed    bool
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{writer: make(chan struct{}, 1), committed: newDB()}
}

// Close drops the store's data. Drivers on it then fail with
// ErrUnavailable, as drivers do on a database that is gone.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.committed = true, newDB()
}

var errStoreClosed = &driver.Error{Kind: driver.ErrUnavailable, Err: errors.New("memdriver: the store is closed"),
	Advice: "the in-memory store was closed and its data dropped; open a driver on a new store"}

// db is one version of a store's data.
type db struct {
	nextStream int64
	streams    map[int64]*streamData
	byName     map[string]int64
	// settings holds the registry's settings by scope: a stream version, a
	// whole stream (version 0), registry-wide (stream 0, version 0).
	settings map[scopeKey]driver.RegistrySettings
	// docs are the global schema ids with their documents; byFingerprint
	// finds a fingerprint's id. They outlive the streams that recorded them.
	docs          map[int64]driver.SchemaDocument
	byFingerprint map[string]int64
	nextDoc       int64
	// subjects are the free subjects by name (driver.Subjects).
	subjects map[string]*subjectData
	// samples are each stream's samples by stream id, in time order
	// (samples.go); a slice is replaced, never changed in place.
	samples map[int64][]driver.Sample
	// owned marks the streams a caller transaction's copy has copied for
	// itself; nil on the committed data, which is changed in place.
	owned map[int64]bool
}

func newDB() *db {
	return &db{streams: map[int64]*streamData{}, byName: map[string]int64{}, settings: map[scopeKey]driver.RegistrySettings{},
		docs: map[int64]driver.SchemaDocument{}, byFingerprint: map[string]int64{}, subjects: map[string]*subjectData{},
		samples: map[int64][]driver.Sample{}}
}

// fork returns a copy of the data for a caller transaction: the small maps
// are copied now, each stream when the transaction first writes it.
func (b *db) fork() *db {
	c := *b
	c.streams, c.byName, c.settings = maps.Clone(b.streams), maps.Clone(b.byName), maps.Clone(b.settings)
	c.docs, c.byFingerprint = maps.Clone(b.docs), maps.Clone(b.byFingerprint)
	c.subjects = make(map[string]*subjectData, len(b.subjects))
	for name, s := range b.subjects {
		c.subjects[name] = s.clone()
	}
	c.samples = maps.Clone(b.samples)
	c.owned = map[int64]bool{}
	return &c
}

// stream returns a stream to read, or ErrStreamNotFound.
func (b *db) stream(id int64) (*streamData, error) {
	s, ok := b.streams[id]
	if !ok {
		return nil, fmt.Errorf("memdriver: stream %d: %w", id, driver.ErrStreamNotFound)
	}
	return s, nil
}

// writable returns a stream to change: in a caller transaction's copy, its
// own copy of the stream.
func (b *db) writable(id int64) (*streamData, error) {
	s, err := b.stream(id)
	if err != nil || b.owned == nil || b.owned[id] {
		return s, err
	}
	s = s.clone()
	b.streams[id], b.owned[id] = s, true
	return s, nil
}

// streamData is a stream's configuration, log, groups and registry entries.
type streamData struct {
	cfg    driver.StreamConfig
	nextID int64
	// ids lists the log's ids in order; parts the same per partition.
	ids   []int64
	parts []partition
	rows  map[int64]*row
	// heads maps a key to its head's id, on a compacted stream.
	heads     map[string]int64
	groups    map[string]*groupData
	revisions []driver.SchemaRevision
	readers   map[readerKey]driver.Reader
}

// partition is one partition's ids in order and the greatest id it ever had.
type partition struct {
	ids  []int64
	high int64
}

// row is a stored message; it never changes once written.
type row struct {
	driver.Row
	revision int
}

type readerKey struct {
	group   string
	version int
}

// groupData is a consumer group's configuration, cursors and exceptions.
type groupData struct {
	cfg           driver.GroupConfig
	cursors       []int64
	ex            map[int64]exception
	removedUnread int64
}

// exception is an unresolved delivery of a group: leased, delayed or dead.
type exception struct {
	id          int64
	partition   int
	version     int
	state       driver.ExceptionState
	attempt     int
	due         time.Time
	token       string
	holder      string
	lastError   string
	firstFailed time.Time // zero until the first failure
	updated     time.Time
	history     []driver.FailureRecord
}

// pending reports a leased or delayed exception.
func (e exception) pending() bool {
	return e.state == driver.StateLeased || e.state == driver.StateDelayed
}

func newStream(cfg driver.StreamConfig) *streamData {
	return &streamData{cfg: cfg, parts: make([]partition, cfg.Partitions), rows: map[int64]*row{}, heads: map[string]int64{},
		groups: map[string]*groupData{}, readers: map[readerKey]driver.Reader{}}
}

// clone copies everything a write may change in place; rows are shared,
// since they never change.
func (s *streamData) clone() *streamData {
	c := *s
	c.ids, c.parts = slices.Clone(s.ids), slices.Clone(s.parts)
	for i := range c.parts {
		c.parts[i].ids = slices.Clone(s.parts[i].ids)
	}
	c.rows, c.heads, c.readers = maps.Clone(s.rows), maps.Clone(s.heads), maps.Clone(s.readers)
	c.revisions = slices.Clone(s.revisions)
	c.groups = make(map[string]*groupData, len(s.groups))
	for n, g := range s.groups {
		gc := *g
		gc.cursors, gc.ex = slices.Clone(g.cursors), maps.Clone(g.ex)
		c.groups[n] = &gc
	}
	return &c
}

// group returns a group of the stream, or ErrGroupNotFound.
func (s *streamData) group(name string) (*groupData, error) {
	g, ok := s.groups[name]
	if !ok {
		return nil, fmt.Errorf("memdriver: group %q: %w", name, driver.ErrGroupNotFound)
	}
	return g, nil
}

// isHead reports whether a row may be claimed: on a compacted stream, only
// its key's head.
func (s *streamData) isHead(r *row) bool {
	return !s.cfg.Compacted || (r.HasKey && s.heads[r.Key] == r.ID)
}

// after returns the ids of a partition above id.
func (p partition) after(id int64) []int64 {
	i, _ := slices.BinarySearch(p.ids, id+1)
	return p.ids[i:]
}

// read runs fn on the committed data; it never waits for the writer.
func (d *Driver) read(ctx context.Context, fn func(*db) error) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.store.mu.RLock()
	defer d.store.mu.RUnlock()
	if d.store.closed {
		return errStoreClosed
	}
	return fn(d.store.committed)
}

// write runs fn in the caller's transaction when tx is not nil, or else
// holding the writer, on the committed data. fn must check everything that
// can fail before it changes anything: there is no undo outside a caller's
// transaction.
func (d *Driver) write(ctx context.Context, tx driver.Tx, fn func(*db) error) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	if tx != nil {
		t, err := d.own(tx)
		if err != nil {
			return err
		}
		return t.run(fn)
	}
	if err := d.takeWriter(ctx); err != nil {
		return err
	}
	defer func() { <-d.store.writer }()
	d.store.mu.Lock()
	defer d.store.mu.Unlock()
	if d.store.closed {
		return errStoreClosed
	}
	return fn(d.store.committed)
}

// decide runs a caller's decision inside a write (a registry's Decide,
// which may read the store to judge against stored documents): it lets go
// of the data lock meanwhile, keeping the writer, so the decision's reads
// proceed and no other write changes what the write has read. The write
// must not have changed anything yet.
func (d *Driver) decide(fn func() error) error {
	d.store.mu.Unlock()
	err := fn()
	d.store.mu.Lock()
	if err == nil && d.store.closed {
		err = errStoreClosed
	}
	return err
}

// takeWriter waits for the store's writer, for at most the busy timeout.
func (d *Driver) takeWriter(ctx context.Context) error {
	select {
	case d.store.writer <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(d.busyTimeout)
	defer timer.Stop()
	select {
	case d.store.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memdriver: nothing was written, the context ended while waiting for the writer: %w", ctx.Err())
	case <-timer.C:
		return &driver.Error{Kind: driver.ErrConflict, Err: fmt.Errorf("memdriver: the writer was busy for %v", d.busyTimeout),
			Advice: "another transaction of the store (a ProduceTx, AckTx, RetryTx or DeadTx not yet committed?) held its single writer; " +
				"commit such transactions promptly and retry"}
	}
}
