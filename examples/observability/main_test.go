package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans go to the collector over
// OTLP/HTTP instead of stdout.
func TestOTLPEndpoint(t *testing.T) {
	var mu sync.Mutex
	var requests []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		if len(body) == 0 {
			t.Errorf("empty export request")
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("spans went to stdout too: %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) == 0 || requests[0] != "POST /v1/traces application/x-protobuf" {
		t.Errorf("collector saw %v", requests)
	}
}
