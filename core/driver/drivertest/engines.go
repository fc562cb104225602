package drivertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// EngineCase is a version text captured from an engine, with what a
// driver's detection must make of it.
type EngineCase struct {
	Version string
	Engine  string
	// Missing are substrings of the refusal; nil: the engine is accepted.
	Missing []string
	// Advice is a substring of the refusal's advice.
	Advice string
}

// CheckEngines runs a driver's engine detection against captured version
// texts: classify names the engine, and refuse (Migrate's check) accepts
// it or refuses it with an ErrDatabase matching unsupported (the driver's
// ErrUnsupportedServer) that names each missing capability and advises
// what to use.
func CheckEngines(t *testing.T, classify func(version string) driver.Engine, refuse func(version string) error, unsupported error, cases []EngineCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Engine+" "+tc.Version[:min(20, len(tc.Version))], func(t *testing.T) {
			t.Parallel()
			if got := classify(tc.Version).Name; got != tc.Engine {
				t.Errorf("engine %q; want %q", got, tc.Engine)
			}
			err := refuse(tc.Version)
			if tc.Missing == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *driver.Error
			if !errors.Is(err, unsupported) || !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) {
				t.Fatalf("%v; want an ErrDatabase with %v", err, unsupported)
			}
			for _, m := range tc.Missing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
			if !strings.Contains(de.Advice, tc.Advice) {
				t.Errorf("advice %q; want it to say %q", de.Advice, tc.Advice)
			}
		})
	}
}
