// Package jsonschema_test checks contrib/jsonschema on the SQL drivers: a
// RawPayload producer that validates refuses a message breaking its JSON
// Schema, references included, and writes nothing of its batch, on
// SQLite, PostgreSQL and MariaDB. It lives in this test-only module so
// that contrib/jsonschema requires core and nothing else of this
// repository; its own tests run on core/memdriver.
package jsonschema_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/jsonschema"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// money is a shared schema on a stream of its own; orders refers to it by
// name (a reference, R10).
const (
	money  = `{"type":"object","properties":{"cents":{"type":"integer","minimum":0}},"required":["cents"]}`
	orders = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
	  "properties":{"id":{"type":"string"},"total":{"$ref":"money.json"}},"required":["id","total"],"additionalProperties":false}`
)

// TestProducerRefusesInvalidJSON: on every driver, a batch holding one
// message that breaks the referenced schema is refused with the
// violation's path and writes nothing; the valid message alone is then
// written, and a client opened anew on the same database sees only it.
func TestProducerRefusesInvalidJSON(t *testing.T) {
	t.Parallel()
	for _, tg := range []conformance.Target{targets.SQLite(), targets.Postgres(), targets.MySQL()} {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ns := tg.NewNamespace(t)
			c := open(t, tg, ns)
			reg := c.Registry()
			if _, err := reg.Register(ctx, "money", 1, []byte(money)); err != nil {
				t.Fatal(err)
			}
			if _, err := reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "orders", Version: 1, Schema: []byte(orders),
				References: []sqlstreams.Reference{{Name: "money.json", Stream: "money", Version: 1}}}); err != nil {
				t.Fatal(err)
			}
			stream := c.Stream[sqlstreams.RawPayload]("orders")
			p, err := stream.Producer().Register(ctx, &sqlstreams.ProducerOptions{Validate: true})
			if err != nil {
				t.Fatal(err)
			}
			good := sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"id":"o-1","total":{"cents":1200}}`)}
			bad := sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"id":"o-2","total":{"cents":-5}}`)}
			_, err = p.ProduceBatch(ctx, sqlstreams.NewMessage(good), sqlstreams.NewMessage(bad))
			var verr *sqlstreams.ValidationError
			if !errors.Is(err, sqlstreams.ErrInvalidMessage) || !errors.As(err, &verr) ||
				len(verr.Violations) != 1 || verr.Violations[0].Path != "/total/cents" {
				t.Fatalf("ProduceBatch with a message below the referenced minimum: %v, want one violation at /total/cents", err)
			}
			if n := records(t, stream); n != 0 {
				t.Fatalf("the refused batch wrote %d record(s)", n)
			}
			if _, err := p.Produce(ctx, good); err != nil {
				t.Fatalf("Produce a valid message: %v", err)
			}
			_ = c.Close()
			if n := records(t, open(t, tg, ns).Stream[sqlstreams.RawPayload]("orders")); n != 1 {
				t.Fatalf("after a restart the stream holds %d record(s), want the valid one", n)
			}
		})
	}
}

func open(t *testing.T, tg conformance.Target, ns string) *sqlstreams.Client {
	t.Helper()
	drv, err := tg.Open(ns)
	if err != nil {
		t.Fatalf("open %s: %v", tg.Name, err)
	}
	c, err := sqlstreams.Open(context.Background(), drv, sqlstreams.WithJSONValidation(jsonschema.Compiler()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatalf("open %s: %v", tg.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func records(t *testing.T, s *sqlstreams.Stream[sqlstreams.RawPayload]) int {
	t.Helper()
	page, err := s.Browse(context.Background(), sqlstreams.BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Records)
}
