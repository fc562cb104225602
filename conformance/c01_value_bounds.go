package conformance

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C1_ValueBounds", testValueBounds) }

// EventMax is at the greatest schema version every driver stores.
type EventMax struct {
	Seq int `json:"seq"`
}

func (EventMax) SchemaVersion() int { return sqlstreams.MaxSchemaVersion }

// EventTooNew is one past it.
type EventTooNew struct{}

func (EventTooNew) SchemaVersion() int { return sqlstreams.MaxSchemaVersion + 1 }

// C1 at its bounds: every value is stored as given or refused with
// ErrInvalidMessage before anything is written, identically on every
// driver. Schema versions run from 1 to MaxSchemaVersion; compaction ranks
// hold every int64; RawPayload bytes come back exactly as produced; every
// valid JSON document within MaxPayloadBytes and MaxJSONDepth is accepted,
// the escape \u0000 included; invalid UTF-8 and NUL bytes in keys and
// headers are refused.
func testValueBounds(t *testing.T, h *harness) {
	t.Run("SchemaVersion", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		p := producer[EventMax](t, c, "c1-version")
		id, err := p.Produce(ctx(t), EventMax{Seq: 1})
		if err != nil {
			t.Fatalf("produce at version %d: %v", sqlstreams.MaxSchemaVersion, err)
		}
		got := drain(t, consumer[EventMax](t, c, "c1-version", "g", nil))
		if len(got) != 1 || got[0].ID != id || got[0].SchemaVersion != sqlstreams.MaxSchemaVersion {
			t.Errorf("read back %+v; want row %d at version %d", got, id, sqlstreams.MaxSchemaVersion)
		}
		if _, err := c.Stream[EventTooNew]("c1-version").Producer().Register(ctx(t), nil); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
			t.Errorf("registering a type at version %d: %v; want ErrInvalidMessage", sqlstreams.MaxSchemaVersion+1, err)
		}
		raw := producer[sqlstreams.RawPayload](t, c, "c1-version")
		for _, v := range []int{0, -1, sqlstreams.MaxSchemaVersion + 1, math.MaxInt} {
			if _, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: v, Data: []byte(`{}`)}); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
				t.Errorf("RawPayload at version %d: %v; want ErrInvalidMessage", v, err)
			}
		}
		if n := health(t, c, "c1-version").HighWater; n != id {
			t.Errorf("high-water %d after refused produces; want %d: nothing may be written", n, id)
		}
	})

	t.Run("CompactionRankInt64", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		const stream = "c1-rank"
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, c, stream)
		// An event time in unix milliseconds, then ranks at the edges.
		const eventTime = int64(1_764_000_000_000)
		ranks := []struct {
			key     string
			ranks   []int64
			winning int // index into ranks
		}{
			{"event-time", []int64{eventTime + 1, eventTime}, 0},
			{"max", []int64{math.MaxInt64 - 1, math.MaxInt64, 0}, 1},
			{"min", []int64{math.MinInt64, math.MinInt64 + 1}, 1},
			{"over-2^31", []int64{1 << 31, 1<<31 - 1}, 0},
		}
		want := map[string]int64{}
		for _, k := range ranks {
			for i, r := range k.ranks {
				id, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.Key(k.key), sqlstreams.CompactionRank(r))
				if err != nil {
					t.Fatalf("produce %s at rank %d: %v", k.key, r, err)
				}
				if i == k.winning {
					want[k.key] = id
				}
			}
		}
		got := drain(t, consumer[EventV1](t, c, stream, "g", nil))
		if len(got) != len(ranks) {
			t.Fatalf("%d heads claimable, want %d: %v", len(got), len(ranks), idsOf(got))
		}
		for _, d := range got {
			var k = -1
			for i := range ranks {
				if ranks[i].key == d.Key {
					k = i
				}
			}
			if k < 0 || d.ID != want[d.Key] || d.CompactionRank != ranks[k].ranks[ranks[k].winning] {
				t.Errorf("head of %q is row %d at rank %d; want row %d at rank %d", d.Key, d.ID, d.CompactionRank, want[d.Key], ranks[k].ranks[ranks[k].winning])
			}
		}
	})

	t.Run("RawPayloadBytesExact", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		p := producer[sqlstreams.RawPayload](t, c, "c1-bytes")
		deep := strings.Repeat("[", sqlstreams.MaxJSONDepth) + strings.Repeat("]", sqlstreams.MaxJSONDepth)
		payloads := [][]byte{
			[]byte(`{"b":1,  "a":2}`),                     // key order and spacing
			[]byte("  {\n\t\"x\" : [1,2 ,3]}\n"),          // surrounding whitespace
			[]byte(`{"e":"\u00e9","é":"é","esc":"\/\""}`), // escapes kept as written
			[]byte(`{"nul":"a\u0000b"}`),                  // the JSON escape for NUL
			[]byte(`{"dup":1,"dup":2}`),                   // duplicate keys
			[]byte(`1.50000000000000000001e+400`),         // a number no float holds
			[]byte(`"\ud83d\ude00 emoji 😀"`),              // surrogate pair and raw
			[]byte(deep),                                  // nested exactly MaxJSONDepth
		}
		// And a string of exactly MaxPayloadBytes.
		big := append([]byte(`"`), bytes.Repeat([]byte("x"), sqlstreams.MaxPayloadBytes-2)...)
		payloads = append(payloads, append(big, '"'))
		ids := map[int64][]byte{}
		for i, data := range payloads {
			id, err := p.Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: data})
			if err != nil {
				t.Fatalf("payload %d (%.40q): %v", i, data, err)
			}
			ids[id] = data
		}
		for _, d := range drain(t, consumer[sqlstreams.RawPayload](t, c, "c1-bytes", "g", nil)) {
			if want := ids[d.ID]; !bytes.Equal(d.Value.Data, want) {
				t.Errorf("row %d came back as %.60q; want the bytes produced, %.60q", d.ID, d.Value.Data, want)
			}
			delete(ids, d.ID)
		}
		if len(ids) != 0 {
			t.Errorf("%d payloads never came back", len(ids))
		}
	})

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		const stream = "c1-refused"
		raw := producer[sqlstreams.RawPayload](t, c, stream)
		typed := producer[EventV1](t, c, stream)
		tooDeep := strings.Repeat("[", sqlstreams.MaxJSONDepth+1) + strings.Repeat("]", sqlstreams.MaxJSONDepth+1)
		tooBig := append(append([]byte(`"`), bytes.Repeat([]byte("x"), sqlstreams.MaxPayloadBytes-1)...), '"')
		for name, data := range map[string][]byte{
			"invalid UTF-8":        []byte("{\"a\":\"\xff\xfe\"}"),
			"not JSON":             []byte(`{"a":`),
			"raw NUL byte":         []byte("{\"a\":\"\x00\"}"),
			"nested too deep":      []byte(tooDeep),
			"over MaxPayloadBytes": tooBig,
			"empty":                nil,
		} {
			if _, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: data}); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
				t.Errorf("RawPayload %s: %v; want ErrInvalidMessage", name, err)
			}
		}
		for name, opt := range map[string]sqlstreams.ProduceOption{
			"key with NUL":           sqlstreams.Key("a\x00b"),
			"key not UTF-8":          sqlstreams.Key("\xff"),
			"key too long":           sqlstreams.Key(strings.Repeat("k", sqlstreams.MaxKeyLength+1)),
			"header value with NUL":  sqlstreams.Header("h", "a\x00b"),
			"header name with NUL":   sqlstreams.Header("h\x00", "v"),
			"header value not UTF-8": sqlstreams.Header("h", "\xff"),
			"empty header name":      sqlstreams.Header("", "v"),
			"headers over the limit": sqlstreams.Header("h", strings.Repeat("v", sqlstreams.MaxHeaderBytes)),
			"routing key not a word": sqlstreams.RoutingKey("eu web"),
		} {
			_, err := typed.Produce(ctx(t), EventV1{}, opt)
			if !errors.Is(err, sqlstreams.ErrInvalidMessage) && !errors.Is(err, sqlstreams.ErrInvalidName) {
				t.Errorf("%s: %v; want ErrInvalidMessage (or ErrInvalidName)", name, err)
			}
		}
		// A batch with one bad message writes none of them.
		_, err := typed.ProduceBatch(ctx(t), sqlstreams.NewMessage(EventV1{Seq: 1}), sqlstreams.NewMessage(EventV1{Seq: 2}, sqlstreams.Key("a\x00")))
		if !errors.Is(err, sqlstreams.ErrInvalidMessage) {
			t.Errorf("batch with a NUL key: %v; want ErrInvalidMessage", err)
		}
		okKey := "ключ-🔑-" + strings.Repeat("k", 20)
		id, err := typed.Produce(ctx(t), EventV1{Seq: 3}, sqlstreams.Key(okKey), sqlstreams.Header("trace", "ä\u2028"), sqlstreams.Header("h2", ""))
		if err != nil {
			t.Fatalf("valid UTF-8 key and headers: %v", err)
		}
		got := drain(t, consumer[EventV1](t, c, stream, "g", nil))
		if len(got) != 1 {
			t.Fatalf("read back %v; want only row %d", idsOf(got), id)
		}
		if _, kept := got[0].Headers["h2"]; got[0].ID != id || got[0].Key != okKey || got[0].Headers["trace"] != "ä\u2028" || !kept {
			t.Errorf("read back %+v; want row %d with its key and headers as given", got[0], id)
		}
	})
}
