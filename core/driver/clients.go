package driver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// ClientDirectory is implemented by drivers that keep a record of each
// connected client: its heartbeat. An operator then tells an idle, healthy
// consumer (its client seen a moment ago) from a dead one (seen long ago, or
// closed). It is optional, as Notifier is: a driver without it still meets
// every delivery contract, and the client records nothing (C22).
type ClientDirectory interface {
	// RecordClient stores p.Client under its Instance, replacing what was
	// stored for it. It never waits on a lock a claim, settle or caller's
	// transaction holds for longer than the driver's lock timeout.
	RecordClient(ctx context.Context, p RecordClientParams) error
	// ListClients returns every stored record ordered by Instance.
	ListClients(ctx context.Context, p ListClientsParams) ([]ClientRecord, error)
	// PruneClients removes the records last seen before p.Before and returns
	// how many it removed.
	PruneClients(ctx context.Context, p PruneClientsParams) (int64, error)
}

// ClientRecord is one client's heartbeat record.
type ClientRecord struct {
	// Instance identifies one Open of a client: a random id, so that two
	// processes given the same Identity keep two records.
	Instance string
	// Identity is the client's name (WithIdentity), Host and PID where it
	// runs, LibraryVersion the sqlstreams core module it was built with.
	Identity       string
	Host           string
	PID            int
	LibraryVersion string
	// Groups lists the groups the client has members of, by stream id, in
	// (StreamID, Group) order.
	Groups []ClientGroup
	// StartedAt is when the client opened; LastSeen its latest heartbeat;
	// HeartbeatEvery how often it promised to beat, so that a reader judges
	// liveness by the writer's own interval. ClosedAt is set when the client
	// closed cleanly, zero while it runs (or after it died).
	StartedAt      time.Time
	LastSeen       time.Time
	HeartbeatEvery time.Duration
	ClosedAt       time.Time
}

// ClientGroup names a group a client has members of.
type ClientGroup struct {
	StreamID int64  `json:"stream_id"`
	Group    string `json:"group"`
}

// RecordClientParams holds the record to store.
type RecordClientParams struct {
	Client ClientRecord
}

// ListClientsParams is empty: every record is returned.
type ListClientsParams struct{}

// PruneClientsParams bounds what PruneClients removes.
type PruneClientsParams struct {
	Before time.Time
}

// EncodeClientGroups is the text every driver stores for a record's Groups:
// a JSON array, sorted, so that a record reads back equal to what was
// written.
func EncodeClientGroups(groups []ClientGroup) string {
	sorted := slices.Clone(groups)
	slices.SortFunc(sorted, func(a, b ClientGroup) int {
		return cmp.Or(cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Group, b.Group))
	})
	sorted = slices.Compact(sorted)
	if sorted == nil {
		sorted = []ClientGroup{}
	}
	b, _ := json.Marshal(sorted) // a slice of plain structs always encodes
	return string(b)
}

// DecodeClientGroups reads what EncodeClientGroups wrote.
func DecodeClientGroups(text string) ([]ClientGroup, error) {
	var groups []ClientGroup
	if err := json.Unmarshal([]byte(text), &groups); err != nil {
		return nil, fmt.Errorf("%w: a client record's groups do not decode: %v", ErrDatabase, err)
	}
	return groups, nil
}

// ScanClient reads a client_heartbeat row of instance, identity, host, pid,
// library_version, group_list (as text), started_at, last_seen,
// heartbeat_every_us and closed_at, in that order, on every engine alike.
// Times are stored as a T, which at turns into UTC; closed_at is NULL while
// the client runs.
func ScanClient[T any](r RowScanner, at func(T) time.Time) (ClientRecord, error) {
	var c ClientRecord
	var groups string
	var started, seen T
	var closed *T
	var every int64
	if err := r.Scan(&c.Instance, &c.Identity, &c.Host, &c.PID, &c.LibraryVersion, &groups, &started, &seen, &every, &closed); err != nil {
		return c, err
	}
	var err error
	c.Groups, err = DecodeClientGroups(groups)
	c.StartedAt, c.LastSeen, c.HeartbeatEvery = at(started), at(seen), time.Duration(every)*time.Microsecond
	if closed != nil {
		c.ClosedAt = at(*closed)
	}
	return c, err
}
