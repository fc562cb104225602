package sqlstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// ProducerBuilder registers producers for a stream; get one from
// Stream.Producer.
type ProducerBuilder[T Versioned] struct{ stream *Stream[T] }

// Producer returns a builder whose Register makes a producer of T.
func (s *Stream[T]) Producer() *ProducerBuilder[T] { return &ProducerBuilder[T]{stream: s} }

// ProducerOptions configure a producer. Nil means defaults.
type ProducerOptions struct {
	// Validate checks each RawPayload against the latest revision
	// registered at its version before anything is appended (see
	// Registry.Validate); a message that breaks it fails the call with a
	// *ValidationError and nothing is written. A typed producer's messages
	// follow T's own schema, so only a RawPayload producer may set it.
	Validate bool
}

// Producer appends messages of type T. It is safe for concurrent use.
type Producer[T Versioned] struct {
	client *Client
	// stream is the configuration the producer plans rows with; an append
	// refused as stale replaces it with the stored one (see retryStale).
	stream   atomic.Pointer[driver.StreamConfig]
	version  int
	revision int // the registry revision of T's schema, stamped on rows
	raw      bool
	validate bool // check each RawPayload against the registry first
	// byPointer encodes &value, which writes the same bytes as value
	// (encodesByPointer) without copying it into an interface first.
	byPointer bool
	next      atomic.Uint64 // round-robin partition for keyless messages
}

// Register checks T, creates the stream with defaults when it is missing,
// records T's JSON Schema in the registry and returns a producer. opts may be
// nil. A schema that breaks the stream's compatibility level at T's version,
// or a registered reader at it, fails with ErrIncompatibleSchema and records
// nothing; in READONLY mode a schema not yet recorded fails with ErrReadOnly.
func (b *ProducerBuilder[T]) Register(ctx context.Context, opts *ProducerOptions) (*Producer[T], error) {
	version, raw, err := typeVersion[T]()
	if err != nil {
		return nil, err
	}
	var sch *schema.Schema
	if !raw {
		if sch, err = schema.For[T](); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
		}
	}
	cfg, created, err := b.stream.ensure(ctx)
	if err != nil {
		return nil, err
	}
	validate := opts != nil && opts.Validate
	if validate && !raw {
		return nil, fmt.Errorf("%w: ProducerOptions.Validate is for RawPayload producers; a %s is encoded from its own registered schema", ErrInvalidOption, typeName[T]())
	}
	p := &Producer[T]{client: b.stream.client, version: version, raw: raw, validate: validate,
		byPointer: !raw && encodesByPointer(reflect.TypeFor[T]())}
	p.stream.Store(&cfg)
	if !raw {
		p.revision, err = b.stream.client.Registry().record(ctx, registration{stream: cfg, typ: typeName[T](), version: version, schema: sch})
		if err != nil {
			b.stream.undoCreate(ctx, cfg, created)
			return nil, err
		}
	}
	return p, nil
}

// Stream returns the configuration of the stream the producer writes to.
func (p *Producer[T]) Stream() StreamInfo { return infoFrom(*p.stream.Load()) }

// ProduceOption sets per-message metadata.
type ProduceOption func(*messageMeta)

type messageMeta struct {
	key     string
	hasKey  bool
	routing string
	rank    int64
	headers map[string]string
}

// Key sets the message key. It picks the partition (hash(key) mod partitions)
// and, on a compacted stream, which value the message replaces.
func Key(k string) ProduceOption {
	return func(m *messageMeta) { m.key, m.hasKey = k, true }
}

// RoutingKey sets the dot-separated words that group bindings match.
func RoutingKey(rk string) ProduceOption {
	return func(m *messageMeta) { m.routing = rk }
}

// CompactionRank orders writes of one key at one schema version on a
// compacted stream; the head is the greatest (version, rank, id). A bridge
// that copies old-version heads forward uses rank -1, so its copy beats the
// old head yet loses to any live rank-0 write of the new version. Every
// int64 is a rank (an event time in unix milliseconds is a common one), on
// every driver.
func CompactionRank(rank int64) ProduceOption {
	return func(m *messageMeta) { m.rank = rank }
}

// Header adds a header; headers travel with the message as strings.
func Header(name, value string) ProduceOption {
	return func(m *messageMeta) {
		if m.headers == nil {
			m.headers = map[string]string{}
		}
		m.headers[name] = value
	}
}

// Message is a value with its produce options, for ProduceBatch.
type Message[T Versioned] struct {
	Value   T
	Options []ProduceOption
}

// NewMessage pairs a value with its options for ProduceBatch.
func NewMessage[T Versioned](v T, opts ...ProduceOption) Message[T] {
	return Message[T]{Value: v, Options: opts}
}

// Produce appends one message and returns its id.
func (p *Producer[T]) Produce(ctx context.Context, msg T, opts ...ProduceOption) (int64, error) {
	ids, err := p.append(ctx, nil, []Message[T]{{Value: msg, Options: opts}}, false)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// ProduceBatch appends messages in one transaction: all or none are written.
// It returns their ids in order.
func (p *Producer[T]) ProduceBatch(ctx context.Context, msgs ...Message[T]) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return p.append(ctx, nil, msgs, true)
}

// ProduceTx appends a message inside the caller's transaction, adapted by
// the driver (for example sqlite.Tx(tx)). Consumers see it only after the
// caller commits, and never if it rolls back: the outbox pattern without an
// outbox table.
//
// The price of ids in commit order (C5) is a lock: from this call until the
// caller commits or rolls back, the transaction holds the append lock of the
// message's partition (on SQLite, the database's single writer), and every
// other producer of that partition waits for it. So produce late in the
// transaction and commit soon after. Waiting for a lock another transaction
// holds is bounded (each driver documents its default and how to set it) and
// fails with ErrConflict; two caller transactions that each hold a partition
// the other needs end with one of them failing with ErrConflict. After
// ErrConflict the caller's transaction must be rolled back; retry it whole.
func (p *Producer[T]) ProduceTx(ctx context.Context, tx driver.Tx, msg T, opts ...ProduceOption) (int64, error) {
	if tx == nil {
		return 0, fmt.Errorf("%w: nil transaction; use Produce to write in a transaction of its own", ErrInvalidOption)
	}
	ids, err := p.append(ctx, tx, []Message[T]{{Value: msg, Options: opts}}, false)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

func (p *Producer[T]) append(ctx context.Context, tx driver.Tx, msgs []Message[T], batch bool) ([]int64, error) {
	if err := p.client.checkOpen(); err != nil {
		return nil, err
	}
	cfg := *p.stream.Load()
	now := time.Now().UTC()
	rows, err := p.rows(cfg, msgs, now)
	if err != nil && cfg.Compacted && errors.Is(err, ErrInvalidMessage) {
		// A keyless message for a stream this producer knows as compacted:
		// compaction may have been switched off since (a driver refuses only
		// what is stale, and a refused row never reaches it), so ask once.
		if fresh, ok := p.refresh(ctx, cfg); ok && !fresh.Compacted {
			cfg = fresh
			rows, err = p.rows(cfg, msgs, now)
		}
	}
	if err == nil && p.validate {
		err = p.validateRows(ctx, cfg, rows)
	}
	if err != nil {
		return nil, err
	}
	write := func(ctx context.Context) ([]int64, error) {
		ids, err := p.appendFresh(ctx, cfg, tx, rows)
		if err != nil {
			return nil, err
		}
		if tx == nil {
			p.client.wake(cfg.ID)
		}
		return ids, nil
	}
	if len(p.client.produceMW) == 0 {
		return write(ctx)
	}
	call := &ProduceCall{Stream: infoFrom(cfg), Tx: tx != nil, Batch: batch, Messages: make([]*OutgoingMessage, len(rows))}
	for i, r := range rows {
		headers := r.Headers
		if headers == nil {
			headers = map[string]string{}
		}
		call.Messages[i] = &OutgoingMessage{Partition: r.Partition, SchemaVersion: r.SchemaVersion, Key: r.Key, HasKey: r.HasKey,
			RoutingKey: r.RoutingKey, CompactionRank: r.CompactionRank, Headers: headers, PayloadSize: len(r.Payload)}
	}
	return p.client.produceThrough(ctx, call, func(ctx context.Context) ([]int64, error) {
		// What the middleware left in the headers is what is written.
		for i, m := range call.Messages {
			if err := validateHeaders(m.Headers); err != nil {
				return nil, p.refused(cfg, i, len(msgs), fmt.Errorf("headers set by middleware: %w", err))
			}
			rows[i].Headers = m.Headers
		}
		return write(ctx)
	})
}

// maxStaleRetries bounds how often one append plans again after the stream
// was altered under it; each retry follows a change an operator made, so
// more than a few in a row means the stream is being altered in a loop.
const maxStaleRetries = 5

// appendFresh appends rows planned with cfg. When the driver refuses them
// because the stream was altered since cfg was read (another process added
// partitions or switched compaction), it keeps the stored configuration for
// this and later appends, places the rows again with it (keys hash over the
// new partition count) and retries: so a producer never writes a key to the
// partition of an old count once a newer count is stored, and the key's
// later rows follow its rows in the new partition. Nothing was written by
// the refused attempt, also inside a caller's transaction.
func (p *Producer[T]) appendFresh(ctx context.Context, cfg driver.StreamConfig, tx driver.Tx, rows []driver.AppendRow) ([]int64, error) {
	for attempt := 0; ; attempt++ {
		ids, err := p.client.drv.Append(ctx, driver.AppendParams{Stream: cfg, Tx: tx, Rows: rows})
		var stale *driver.StreamChangedError
		if err == nil || !errors.As(err, &stale) || attempt == maxStaleRetries {
			if err != nil {
				return nil, fmt.Errorf("sqlstreams: produce to %q: %w", cfg.Name, classify(err))
			}
			return ids, nil
		}
		fresh := stale.Current
		fresh.Name = cfg.Name // the name this producer was made with, for its messages
		if cur := p.stream.Load(); cur.Generation < fresh.Generation {
			p.stream.CompareAndSwap(cur, &fresh)
		}
		p.client.logger.Debug("sqlstreams: the stream was altered; placing the messages again", "stream", cfg.Name,
			"partitions", fresh.Partitions, "compacted", fresh.Compacted)
		if rows, err = p.replace(fresh, rows); err != nil {
			return nil, p.refused(fresh, 0, 1, err)
		}
		cfg = fresh
	}
}

// refresh reads the stream's stored configuration by the name the producer
// was made with and keeps it when it is of the same stream and newer than
// cfg; ok reports that it did.
func (p *Producer[T]) refresh(ctx context.Context, cfg driver.StreamConfig) (driver.StreamConfig, bool) {
	stored, err := p.client.drv.LookupStream(ctx, driver.LookupStreamParams{Name: cfg.Name})
	if err != nil || stored.ID != cfg.ID || stored.Generation <= cfg.Generation {
		return cfg, false
	}
	if cur := p.stream.Load(); cur.Generation < stored.Generation {
		p.stream.CompareAndSwap(cur, &stored)
	}
	return stored, true
}

// replace places rows planned with an older configuration again with cfg,
// or refuses a keyless row now that the stream is compacted.
func (p *Producer[T]) replace(cfg driver.StreamConfig, rows []driver.AppendRow) ([]driver.AppendRow, error) {
	out := slices.Clone(rows)
	for i := range out {
		if cfg.Compacted && !out[i].HasKey {
			return nil, fmt.Errorf("%w: stream was made compacted while producing, so every message needs a key; pass sqlstreams.Key(...)", ErrInvalidMessage)
		}
		out[i].Partition = p.partition(cfg, messageMeta{key: out[i].Key, hasKey: out[i].HasKey})
	}
	return out, nil
}

// rows builds the rows of msgs, or refuses the first that is invalid.
func (p *Producer[T]) rows(cfg driver.StreamConfig, msgs []Message[T], now time.Time) ([]driver.AppendRow, error) {
	rows := make([]driver.AppendRow, len(msgs))
	// One allocation for the batch: a message's options are calls through
	// func values, so the metadata they fill would escape one by one.
	metas := make([]messageMeta, len(msgs))
	for i := range msgs {
		row, err := p.row(cfg, &msgs[i], &metas[i], now)
		if err != nil {
			return nil, p.refused(cfg, i, len(msgs), err)
		}
		rows[i] = row
	}
	return rows, nil
}

// validateRows checks each row's payload against the latest revision at
// its version, looked up once per version in the call.
func (p *Producer[T]) validateRows(ctx context.Context, cfg driver.StreamConfig, rows []driver.AppendRow) error {
	byVersion := map[int]*messageValidator{}
	for i, row := range rows {
		v, ok := byVersion[row.SchemaVersion]
		if !ok {
			var err error
			if v, err = p.client.Registry().validator(ctx, cfg.Name, row.SchemaVersion); err != nil {
				return p.refused(cfg, i, len(rows), err)
			}
			byVersion[row.SchemaVersion] = v
		}
		if err := v.check(row.Payload); err != nil {
			return p.refused(cfg, i, len(rows), err)
		}
	}
	return nil
}

// refused reports message i of n refused before anything was written.
func (p *Producer[T]) refused(cfg driver.StreamConfig, i, n int, err error) error {
	if n > 1 {
		err = fmt.Errorf("message %d of the batch: %w", i, err)
	}
	return fmt.Errorf("sqlstreams: produce to %q: %w", cfg.Name, err)
}

func (p *Producer[T]) row(cfg driver.StreamConfig, m *Message[T], meta *messageMeta, now time.Time) (driver.AppendRow, error) {
	for _, o := range m.Options {
		o(meta)
	}
	if err := validateKey(meta.key); err != nil {
		return driver.AppendRow{}, err
	}
	if err := validateRoutingKey(meta.routing); err != nil {
		return driver.AppendRow{}, err
	}
	if err := validateHeaders(meta.headers); err != nil {
		return driver.AppendRow{}, err
	}
	if cfg.Compacted && !meta.hasKey {
		return driver.AppendRow{}, fmt.Errorf("%w: stream is compacted, so every message needs a key; pass sqlstreams.Key(...)", ErrInvalidMessage)
	}
	version := p.version
	var payload []byte
	if p.raw {
		raw := any(m.Value).(RawPayload)
		if raw.Version < 1 || raw.Version > MaxSchemaVersion {
			return driver.AppendRow{}, fmt.Errorf("%w: RawPayload.Version is %d; set the schema version the data was written at (1 to %d)",
				ErrInvalidMessage, raw.Version, MaxSchemaVersion)
		}
		if err := validatePayload("RawPayload.Data", raw.Data); err != nil {
			return driver.AppendRow{}, err
		}
		if !json.Valid(raw.Data) {
			return driver.AppendRow{}, fmt.Errorf("%w: RawPayload.Data is not valid JSON", ErrInvalidMessage)
		}
		version, payload = raw.Version, raw.Data
	} else {
		var err error
		if p.byPointer {
			payload, err = json.Marshal(&m.Value)
		} else {
			payload, err = json.Marshal(m.Value)
		}
		if err != nil {
			return driver.AppendRow{}, fmt.Errorf("%w: encode %T: %v", ErrInvalidMessage, m.Value, err)
		}
		// The check runs on every message of a batch; the message naming the
		// type is built only when it fails.
		if !payloadValid(payload) {
			return driver.AppendRow{}, validatePayload(fmt.Sprintf("the encoded %T", m.Value), payload)
		}
	}
	return driver.AppendRow{
		Partition:      p.partition(cfg, *meta),
		SchemaVersion:  version,
		SchemaRevision: p.revision,
		Key:            meta.key,
		HasKey:         meta.hasKey,
		RoutingKey:     meta.routing,
		CompactionRank: meta.rank,
		Payload:        payload,
		Headers:        meta.headers,
		ProducedAt:     now,
	}, nil
}

// marshalMethods are the methods through which encoding/json lets a type
// encode itself.
var marshalMethods = []string{"MarshalJSON", "MarshalJSONTo", "MarshalText", "AppendText"}

// encodesByPointer reports whether json.Marshal(&v) writes the same bytes as
// json.Marshal(v) for every v of type t. It does unless t, or a struct field
// or array element reached from t without passing through a pointer, slice,
// map or interface, has a marshal method on its pointer receiver only:
// encoding/json calls such a method for addressable values only, and v
// passed by pointer makes exactly those addressable (what lies behind a
// pointer or in a slice is addressable either way, map and interface
// contents neither way). Encoding through a pointer spares copying each
// value into an interface: a third of the encoding's time and two of its
// three allocations per message.
func encodesByPointer(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, name := range marshalMethods {
		if _, onPointer := pt.MethodByName(name); onPointer {
			if _, onValue := t.MethodByName(name); !onValue {
				return false
			}
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			// encoding/json never encodes an unexported field, unless it
			// embeds a struct whose fields it promotes.
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && !encodesByPointer(f.Type) {
				return false
			}
		}
	case reflect.Array:
		return encodesByPointer(t.Elem())
	}
	return true
}

func (p *Producer[T]) partition(cfg driver.StreamConfig, meta messageMeta) int {
	n := cfg.Partitions
	if n <= 1 {
		return 0
	}
	if meta.hasKey {
		return PartitionForKey(meta.key, n)
	}
	return int(p.next.Add(1) % uint64(n))
}

// PartitionForKey is the partition of a keyed message: FNV-1a (32-bit) of
// the key modulo the partition count, computed in Go so every driver agrees.
func PartitionForKey(key string, partitions int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(partitions))
}
