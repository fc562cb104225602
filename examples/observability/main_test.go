package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// The example prints one trace: checkout → send → process, in one trace,
// with the messaging attributes.
func TestTracePrinted(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	type span struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	spans := map[string]span{}
	dec := json.NewDecoder(&out)
	for {
		var s span
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		spans[s.Name] = s
	}
	checkout, send, process := spans["checkout"], spans["send orders.placed"], spans["process orders.placed"]
	if send.Name == "" || process.Name == "" || checkout.Name == "" {
		t.Fatalf("spans printed: %v", spans)
	}
	if send.Parent.SpanID != checkout.SpanContext.SpanID || process.Parent.SpanID != send.SpanContext.SpanID {
		t.Errorf("chain broken: send's parent %s (checkout %s), process's parent %s (send %s)",
			send.Parent.SpanID, checkout.SpanContext.SpanID, process.Parent.SpanID, send.SpanContext.SpanID)
	}
	if process.SpanContext.TraceID != checkout.SpanContext.TraceID {
		t.Errorf("process in trace %s, checkout in %s", process.SpanContext.TraceID, checkout.SpanContext.TraceID)
	}
	attrs := map[string]any{}
	for _, a := range process.Attributes {
		attrs[a.Key] = a.Value.Value
	}
	for k, want := range map[string]any{"messaging.system": "sqlstreams", "messaging.destination.name": "orders.placed",
		"messaging.consumer.group.name": "billing", "messaging.operation.name": "process", "messaging.sqlstreams.outcome": "ack"} {
		if attrs[k] != want {
			t.Errorf("process %s = %v, want %v", k, attrs[k], want)
		}
	}
}
