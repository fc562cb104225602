package driver_test

import (
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestEngineOf: the first refused engine whose marker the version text
// holds, in any case, else the fallback, which is accepted; a refusal is an
// ErrDatabase with the engine's advice that names what it lacks.
func TestEngineOf(t *testing.T) {
	t.Parallel()
	errUnsupported := errors.New("unsupported")
	refused := []driver.Engine{
		{Name: "Lite", Marker: "-lite-", Missing: []string{"locks"}, Advice: "use Full"},
		{Name: "Proxy", Marker: "proxy", Missing: []string{"order", "locks"}, Advice: "connect directly"},
	}
	for _, tc := range []struct {
		version, engine, text, advice string
	}{
		{version: "8.0.1", engine: "Full"},
		{version: "8.0.1-LITE-v2", engine: "Lite", text: "x: unsupported: Lite lacks locks", advice: "use Full"},
		{version: "9-Proxy-lite", engine: "Proxy", text: "x: unsupported: Proxy lacks order; locks", advice: "connect directly"},
	} {
		e := driver.EngineOf(tc.version, "Full", refused...)
		if e.Name != tc.engine {
			t.Errorf("EngineOf(%q) = %q, want %q", tc.version, e.Name, tc.engine)
		}
		err := e.Refused("x: ", errUnsupported)
		if tc.text == "" {
			if err != nil {
				t.Errorf("%s refused: %v", tc.engine, err)
			}
			continue
		}
		var de *driver.Error
		if !errors.As(err, &de) || !errors.Is(err, driver.ErrDatabase) || !errors.Is(err, errUnsupported) ||
			de.Err.Error() != tc.text || de.Advice != tc.advice {
			t.Errorf("%s: %v; want an ErrDatabase %q advising %q", tc.engine, err, tc.text, tc.advice)
		}
	}
}
