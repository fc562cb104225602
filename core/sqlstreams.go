// Package sqlstreams gives Go services durable, typed message streams inside
// the SQL database they already run: PostgreSQL, MySQL/MariaDB or an embedded
// SQLite file.
//
// A stream is one name with one append-only log. Producers append typed
// messages; consumer groups claim them with leases, retries, delays and dead
// letters; compacted streams keep the current value per key.
//
// Schema versions are first-class. The Go type carries its version through
// [Versioned]; every row stores the version of the type that wrote it; a
// consumer group reads only its own type's version and steps over the rest
// without decoding them; compaction compares the version first; and
// [Stream.Health] says when an old version can be retired. There is no option
// that overrides a type's version: to change the shape of a message, change
// the type and its SchemaVersion.
//
//	client, err := sqlstreams.Open(ctx, sqlite.Open("app.db"))
//	stream := client.Stream[OrderPlacedV2]("orders.placed")
//	producer, err := stream.Producer().Register(ctx, nil)
//	id, err := producer.Produce(ctx, order, sqlstreams.Key("acct-1"))
//	consumer, err := stream.Consumer("fraud-scoring").Register(ctx, nil)
//	err = consumer.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
//		return score(ctx, d.Value)
//	})
package sqlstreams

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Versioned is implemented by every message type. SchemaVersion must return
// a constant of at least 1 and must work on the zero value: the version is a
// property of the type, not of a message.
type Versioned interface {
	SchemaVersion() int
}

// RawPayload is the version-agnostic message: a schema version and the raw
// JSON written at it. A stream handle of RawPayload administers a stream
// without knowing its types (Health, Get, Rename, Destroy); a RawPayload
// group reads every version; producing a RawPayload writes the version it
// carries.
type RawPayload struct {
	Version int
	Data    json.RawMessage
}

// SchemaVersion returns the version the payload was written at.
func (p RawPayload) SchemaVersion() int { return p.Version }

// Errors returned by sqlstreams. Match them with errors.Is; the messages
// around them say what to do next.
var (
	// ErrStreamNotFound: no stream has the name. Create it, or register a
	// producer or consumer, which creates it with defaults.
	ErrStreamNotFound = driver.ErrStreamNotFound
	// ErrStreamExists: the name is taken by another stream.
	ErrStreamExists = driver.ErrStreamExists
	// ErrGroupNotFound: no consumer group has the name on the stream (it may
	// have been deleted while members ran).
	ErrGroupNotFound = driver.ErrGroupNotFound
	// ErrGroupVersion: the group is bound to another schema version.
	ErrGroupVersion = driver.ErrGroupVersion
	// ErrGroupPaused: an operator paused the group (GroupAdmin.Pause). A
	// driver's claim fails with it; Claim, AckAndClaim and Run of a paused
	// group get nothing instead, as from an empty stream.
	ErrGroupPaused = driver.ErrGroupPaused
	// ErrLeaseLost: the delivery's lease expired and may now be held by
	// another consumer, or its row is gone; the outcome was not recorded.
	ErrLeaseLost = driver.ErrLeaseLost
	// ErrClosed: the client was closed.
	ErrClosed = driver.ErrClosed
	// ErrForeignTx: a transaction from another driver was passed to ProduceTx.
	ErrForeignTx = driver.ErrForeignTx
	// ErrUnavailable: the database could not be reached or did not answer in
	// time; nothing was written.
	ErrUnavailable = driver.ErrUnavailable
	// ErrConflict: a lock was not granted in time or the database chose the
	// transaction as a deadlock victim; nothing was written (a caller's
	// transaction must roll back).
	ErrConflict = driver.ErrConflict
	// ErrOutcomeUnknown: the connection failed or the context ended while the
	// database was committing; the write may or may not have been applied.
	ErrOutcomeUnknown = driver.ErrOutcomeUnknown
	// ErrDatabase: the database refused a statement for another reason.
	ErrDatabase = driver.ErrDatabase
	// ErrInvalidName: a stream, group, routing key or binding is malformed.
	ErrInvalidName = errors.New("invalid name")
	// ErrInvalidOption: an option is out of range.
	ErrInvalidOption = errors.New("invalid option")
	// ErrInvalidMessage: a message cannot be produced as given; nothing was
	// written.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrAlreadySettled: the delivery's outcome was already recorded.
	ErrAlreadySettled = errors.New("delivery already settled")
	// ErrShutdownTimeout: handlers ignored cancellation after
	// ShutdownTimeout; their leases are left to expire.
	ErrShutdownTimeout = errors.New("handlers still running after the shutdown timeout")
	// ErrUnsupported: the driver does not offer an optional feature (such
	// as Client.Members). It also matches errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("not supported by this driver: %w", errors.ErrUnsupported)
	// ErrFewerPartitions: Stream.Alter was asked for fewer partitions than
	// the stream has. Partitions are only ever added: removing one would
	// strand its rows and cursors and move keys that have rows there. To
	// shrink, create a new stream and move consumers over.
	ErrFewerPartitions = driver.ErrFewerPartitions
)

// Bounds on what a message may carry. They are the same on every driver:
// a message outside them is refused with ErrInvalidMessage before anything
// is written.
const (
	// MaxSchemaVersion is the greatest SchemaVersion (versions start at 1).
	MaxSchemaVersion = driver.MaxSchemaVersion
	// MaxPayloadBytes bounds an encoded payload. With its headers a row then
	// fits one statement on every engine (MariaDB's default max_allowed_packet
	// is 16 MiB, and string escaping may double a payload's size).
	MaxPayloadBytes = 4 << 20
	// MaxHeaderBytes bounds the names and values of a message's headers
	// together.
	MaxHeaderBytes = 64 << 10
	// MaxJSONDepth bounds how deeply a payload's arrays and objects nest.
	MaxJSONDepth = 1000
)

// typeVersion returns T's schema version, or all=true for RawPayload.
func typeVersion[T Versioned]() (version int, all bool, err error) {
	var zero T
	if _, ok := any(zero).(RawPayload); ok {
		return 0, true, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.SchemaVersion panicked on the zero value (%v); implement it on the value receiver and return a constant", ErrInvalidMessage, zero, r)
		}
	}()
	version = zero.SchemaVersion()
	if version < 1 || version > MaxSchemaVersion {
		return 0, false, fmt.Errorf("%w: %T.SchemaVersion returns %d; use a version from 1 to %d", ErrInvalidMessage, zero, version, MaxSchemaVersion)
	}
	return version, false, nil
}
