package ccompat_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
	"github.com/twmb/franz-go/pkg/sr"
)

// lockedBuffer is a bytes.Buffer the command writes to while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// registryServe runs `sqlstreams registry serve --listen 127.0.0.1:0` in
// process on dbURL until the test ends, and returns the address it printed.
func registryServe(t *testing.T, dbURL string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	o := &sqlstreamscli.Options{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- sqlstreamscli.New(o).Execute(ctx, []string{"--url", dbURL, "registry", "serve", "--listen", "127.0.0.1:0"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("registry serve exited %d after its interrupt; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(time.Minute):
			t.Errorf("registry serve did not stop within a minute of its interrupt")
		}
	})
	printed := regexp.MustCompile(`registry: (http://\S+)/ `)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := printed.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("registry serve exited %d before it listened; stderr:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry serve printed no address within a minute; stderr:\n%s", stderr.String())
		}
	}
}

// TestHowToThroughRegistryServe runs the Avro how-to's story and the
// Protobuf story, under stream versions and Kafka's topic subjects, against
// `sqlstreams registry serve` itself (the command a user runs, with the
// formats it enables), each on a database of its own, on SQLite and
// PostgreSQL; the other tests mount the same handler directly.
func TestHowToThroughRegistryServe(t *testing.T) {
	for _, tg := range []conformance.Target{targets.SQLite(), targets.Postgres()} {
		t.Run(tg.Name, func(t *testing.T) {
			serve := func(t *testing.T) *sr.Client {
				dbURL := tg.NewNamespace(t)
				if tg.Name == "sqlite" {
					dbURL = "sqlite:" + dbURL
				}
				return newSR(t, registryServe(t, dbURL))
			}
			t.Run("avro", func(t *testing.T) {
				cl := serve(t)
				for _, names := range []storyNames{streamNames, topicNames} {
					t.Run(names.orders, func(t *testing.T) { avroStory(t, cl, names) })
				}
				recordNames(t, cl)
			})
			t.Run("protobuf", func(t *testing.T) {
				cl := serve(t)
				for _, names := range []storyNames{streamNames, topicNames} {
					t.Run(names.orders, func(t *testing.T) { protobufStory(t, cl, names) })
				}
			})
		})
	}
}
