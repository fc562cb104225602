package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"
)

// Ctx is a test's context: it ends with the test, or after two minutes, a
// failure detector for a call that would otherwise wait for ever.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Event is the message a driver's own tests of the public API produce and
// consume: one JSON field, schema version 1.
type Event struct {
	N int `json:"n"`
}

// SchemaVersion is the version every Event is written at.
func (Event) SchemaVersion() int { return 1 }

// RandomName is prefix and n random bytes in hex: a schema, database or
// token no other test (or run) uses.
func RandomName(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
