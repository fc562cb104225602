package driver_test

import (
	"slices"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestSecrets: non-empty, each once, longest first (then in byte order).
func TestSecrets(t *testing.T) {
	got := driver.Secrets("pa", "", "pa@ss", "pa", "zz", "p")
	if want := []string{"pa@ss", "pa", "zz", "p"}; !slices.Equal(got, want) {
		t.Fatalf("Secrets = %q, want %q", got, want)
	}
}

// TestPasswordReadings: the widest reading runs from the first ':' to the
// last '@'; net/url's is percent-decoded.
func TestPasswordReadings(t *testing.T) {
	for _, tc := range []struct{ in, widest, url string }{
		{"app:pw@host/db", "pw", ""},
		{"app:pa@ss@tcp(h)/db", "pa@ss", ""},
		{"postgres://app:p%40ss@host/db", "//app:p%40ss", "p@ss"},
		{"app:pa/ss?x@host", "pa/ss?x", ""},
		{"app@host/db", "", ""},
		{"nothing", "", ""},
	} {
		if got := driver.WidestPassword(tc.in); got != tc.widest {
			t.Errorf("WidestPassword(%q) = %q, want %q", tc.in, got, tc.widest)
		}
		if got := driver.URLPassword(tc.in); got != tc.url {
			t.Errorf("URLPassword(%q) = %q, want %q", tc.in, got, tc.url)
		}
	}
}
