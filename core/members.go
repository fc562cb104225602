package sqlstreams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// DefaultHeartbeatInterval is how often a client records that it is alive
// unless WithHeartbeatInterval says otherwise.
const DefaultHeartbeatInterval = 15 * time.Second

// MemberRetention is how long the record of a client that stopped beating
// is kept, so that an operator still sees it as gone; maintenance removes
// older records.
const MemberRetention = 24 * time.Hour

// missedBeats is how many heartbeats a client may miss before it counts as
// gone: one late beat on a busy machine is not a death.
const missedBeats = 3

// WithHeartbeatInterval sets how often the client records in the database
// that it is alive, with the groups it has members of (Client.Members,
// GroupDescription.Members), so that an idle, healthy consumer is told from
// a dead one. The default is DefaultHeartbeatInterval; zero records
// nothing. Drivers that keep no such record (driver.ClientDirectory) ignore
// it.
func WithHeartbeatInterval(d time.Duration) ClientOption {
	return func(c *Client) { c.beat.every = d }
}

// MemberState says whether a client is alive.
type MemberState string

const (
	MemberLive MemberState = "live" // its latest heartbeat is recent
	MemberLeft MemberState = "left" // it closed cleanly
	MemberGone MemberState = "gone" // it missed several heartbeats: it died or lost the database
)

// MemberInfo is what a client recorded about itself with its heartbeat.
type MemberInfo struct {
	// Instance identifies one Open of a client; Identity is its name
	// (WithIdentity), Host and PID where it runs, and LibraryVersion the
	// sqlstreams core module it was built with.
	Instance       string
	Identity       string
	Host           string
	PID            int
	LibraryVersion string
	// Groups are the groups it has registered consumers of.
	Groups []MemberGroup
	// State is judged from LastSeen against the client's own
	// HeartbeatEvery: gone after missing three beats.
	State          MemberState
	StartedAt      time.Time
	LastSeen       time.Time
	ClosedAt       time.Time // zero unless State is MemberLeft
	HeartbeatEvery time.Duration
}

// MemberGroup names a group a client has members of.
type MemberGroup struct {
	Stream string
	Group  string
}

// heartbeat is the client's record of itself and the loop that stores it.
type heartbeat struct {
	every time.Duration
	dir   driver.ClientDirectory // nil: the driver keeps no record
	stop  context.CancelFunc
	soon  chan struct{} // a group was added: record it without waiting a beat

	mu     sync.Mutex
	record driver.ClientRecord
}

// Members lists the clients that recorded a heartbeat in the last
// MemberRetention, live, left or gone, ordered by identity. It fails with
// ErrUnsupported when the driver keeps no such record.
func (c *Client) Members(ctx context.Context) ([]MemberInfo, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	dir, ok := c.drv.(driver.ClientDirectory)
	if !ok {
		return nil, fmt.Errorf("sqlstreams: members: %w: the %s driver keeps no client heartbeats", ErrUnsupported, c.drv.Name())
	}
	records, err := dir.ListClients(ctx, driver.ListClientsParams{})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: members: %w", classify(err))
	}
	streams, err := c.drv.ListStreams(ctx, driver.ListStreamsParams{})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: members: %w", classify(err))
	}
	names := make(map[int64]string, len(streams))
	for _, s := range streams {
		names[s.ID] = s.Name
	}
	now := time.Now()
	out := make([]MemberInfo, 0, len(records))
	for _, r := range records {
		out = append(out, memberInfo(r, names, now))
	}
	slices.SortStableFunc(out, func(a, b MemberInfo) int {
		if a.Identity != b.Identity {
			if a.Identity < b.Identity {
				return -1
			}
			return 1
		}
		return a.StartedAt.Compare(b.StartedAt)
	})
	return out, nil
}

// memberInfo judges one record; groups of streams that are gone are left
// out.
func memberInfo(r driver.ClientRecord, names map[int64]string, now time.Time) MemberInfo {
	m := MemberInfo{Instance: r.Instance, Identity: r.Identity, Host: r.Host, PID: r.PID, LibraryVersion: r.LibraryVersion,
		StartedAt: r.StartedAt, LastSeen: r.LastSeen, ClosedAt: r.ClosedAt, HeartbeatEvery: r.HeartbeatEvery, State: MemberLive}
	switch {
	case !r.ClosedAt.IsZero():
		m.State = MemberLeft
	case now.Sub(r.LastSeen) > missedBeats*r.HeartbeatEvery:
		m.State = MemberGone
	}
	for _, g := range r.Groups {
		if name, ok := names[g.StreamID]; ok {
			m.Groups = append(m.Groups, MemberGroup{Stream: name, Group: g.Group})
		}
	}
	return m
}

// startHeartbeat records the client once, then every interval until
// Close. A failed record is logged, never fatal: the heartbeat is for
// operators, not for delivery.
func (c *Client) startHeartbeat(ctx context.Context) {
	dir, ok := c.drv.(driver.ClientDirectory)
	if !ok || c.beat.every <= 0 {
		return
	}
	host, _ := os.Hostname()
	now := time.Now().UTC().Truncate(time.Microsecond)
	c.beat.dir, c.beat.soon = dir, make(chan struct{}, 1)
	c.beat.record = driver.ClientRecord{Instance: newInstance(), Identity: c.identity, Host: truncate(host, 255), PID: os.Getpid(),
		LibraryVersion: libraryVersion(), StartedAt: now, HeartbeatEvery: c.beat.every}
	c.recordBeat(ctx, time.Time{})
	bctx, cancel := context.WithCancel(context.Background())
	c.beat.stop = cancel
	c.background.Add(1)
	go c.heartbeatLoop(bctx)
}

func (c *Client) heartbeatLoop(ctx context.Context) {
	defer c.background.Done()
	t := time.NewTicker(c.beat.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.beat.soon:
		}
		// A beat once started runs to its end (bounded by the operation
		// timeout), even when Close stops the loop meanwhile: one cancelled
		// mid-statement may still commit on the server after the close's
		// own record, and mark the closed client live again. Close waits
		// for the loop before it records the close.
		c.recordBeat(context.WithoutCancel(ctx), time.Time{})
	}
}

// recordBeat stores the client's record as of now; closed marks a clean
// close.
func (c *Client) recordBeat(ctx context.Context, closed time.Time) {
	c.beat.mu.Lock()
	r := c.beat.record
	r.Groups = slices.Clone(r.Groups)
	c.beat.mu.Unlock()
	r.LastSeen = time.Now().UTC().Truncate(time.Microsecond)
	r.ClosedAt = closed
	octx, cancel := context.WithTimeout(ctx, c.opTimeout)
	defer cancel()
	if err := c.beat.dir.RecordClient(octx, driver.RecordClientParams{Client: r}); err != nil && ctx.Err() == nil {
		c.logger.Warn("sqlstreams: recording the client's heartbeat failed; will retry", "error", classify(err))
	}
}

// recordClose records a clean close, once the loop has ended.
func (c *Client) recordClose() {
	if c.beat.dir != nil {
		c.recordBeat(context.Background(), time.Now().UTC().Truncate(time.Microsecond))
	}
}

// joinGroup adds a group to the client's record and has it stored soon.
func (c *Client) joinGroup(streamID int64, group string) {
	if c.beat.dir == nil {
		return
	}
	g := driver.ClientGroup{StreamID: streamID, Group: group}
	c.beat.mu.Lock()
	added := !slices.Contains(c.beat.record.Groups, g)
	if added {
		c.beat.record.Groups = append(c.beat.record.Groups, g)
	}
	c.beat.mu.Unlock()
	if added {
		select {
		case c.beat.soon <- struct{}{}:
		default:
		}
	}
}

// pruneMembers removes records last seen more than MemberRetention ago.
func (c *Client) pruneMembers(ctx context.Context, now time.Time) (int64, error) {
	dir, ok := c.drv.(driver.ClientDirectory)
	if !ok {
		return 0, nil
	}
	return dir.PruneClients(ctx, driver.PruneClientsParams{Before: now.Add(-MemberRetention)})
}

func newInstance() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// libraryVersion is the version of this module in the running binary's
// build information, "(devel)" inside the repository.
func libraryVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	const path = "github.com/sqlstreams/sqlstreams/core"
	if info.Main.Path == path {
		return info.Main.Version
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil && m.Replace.Version != "" {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return "(devel)"
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
