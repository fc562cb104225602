package sqlstreams

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMatcher checks RabbitMQ topic semantics: '*' is exactly one word, '#'
// zero or more, no bindings match every key, several bindings are a union.
func TestMatcher(t *testing.T) {
	cases := []struct {
		bindings []string
		key      string
		want     bool
	}{
		// No bindings: every key, the empty one too.
		{nil, "", true},
		{nil, "orders.eu", true},
		{[]string{}, "anything.at.all", true},
		// Literal words.
		{[]string{"orders"}, "orders", true},
		{[]string{"orders"}, "orders.eu", false},
		{[]string{"orders"}, "order", false},
		{[]string{"orders"}, "ordersx", false},
		{[]string{"orders"}, "", false},
		{[]string{"orders.eu"}, "orders.eu", true},
		{[]string{"orders.eu"}, "orders.us", false},
		{[]string{"orders.eu"}, "eu.orders", false},
		{[]string{"Orders"}, "orders", false}, // case-sensitive
		// '*': exactly one word.
		{[]string{"*"}, "orders", true},
		{[]string{"*"}, "", false},
		{[]string{"*"}, "orders.eu", false},
		{[]string{"orders.*"}, "orders.eu", true},
		{[]string{"orders.*"}, "orders", false},
		{[]string{"orders.*"}, "orders.eu.web", false},
		{[]string{"*.eu"}, "orders.eu", true},
		{[]string{"*.eu"}, "eu", false},
		{[]string{"*.*"}, "a.b", true},
		{[]string{"*.*"}, "a", false},
		{[]string{"orders.*.web"}, "orders.eu.web", true},
		{[]string{"orders.*.web"}, "orders.web", false},
		// '#': zero or more words.
		{[]string{"#"}, "", true},
		{[]string{"#"}, "orders", true},
		{[]string{"#"}, "a.b.c.d", true},
		{[]string{"orders.#"}, "orders", true},
		{[]string{"orders.#"}, "orders.eu", true},
		{[]string{"orders.#"}, "orders.eu.web", true},
		{[]string{"orders.#"}, "ordersx", false},
		{[]string{"orders.#"}, "payments.orders", false},
		{[]string{"#.web"}, "web", true},
		{[]string{"#.web"}, "orders.eu.web", true},
		{[]string{"#.web"}, "orders.web.eu", false},
		{[]string{"orders.#.web"}, "orders.web", true},
		{[]string{"orders.#.web"}, "orders.a.b.web", true},
		{[]string{"orders.#.web"}, "orders.a.b", false},
		{[]string{"#.eu.#"}, "eu", true},
		{[]string{"#.eu.#"}, "x.eu.y.z", true},
		{[]string{"#.eu.#"}, "x.euro.y", false},
		{[]string{"#.#"}, "", true},
		{[]string{"#.#"}, "a.b", true},
		{[]string{"*.#"}, "", false},
		{[]string{"*.#"}, "a", true},
		{[]string{"#.*"}, "a.b.c", true},
		{[]string{"*.*.#"}, "a", false},
		{[]string{"*.*.#"}, "a.b", true},
		{[]string{"a.#.*.d"}, "a.d", false},
		{[]string{"a.#.*.d"}, "a.x.d", true},
		{[]string{"a.#.b.#.c"}, "a.b.c", true},
		{[]string{"a.#.b.#.c"}, "a.x.b.y.y.c", true},
		{[]string{"a.#.b.#.c"}, "a.x.y.c", false},
		// Several bindings: any one may match.
		{[]string{"eu.#", "payments.*"}, "eu", true},
		{[]string{"eu.#", "payments.*"}, "payments.eu", true},
		{[]string{"eu.#", "payments.*"}, "payments", false},
		{[]string{"eu.#", "payments.*"}, "us.web", false},
	}
	for _, tc := range cases {
		m := matcher(tc.bindings)
		got := m == nil || m(tc.key)
		if got != tc.want {
			t.Errorf("bindings %q, key %q: match %v, want %v", tc.bindings, tc.key, got, tc.want)
		}
		if got := matchBindings(tc.bindings, tc.key); got != tc.want {
			t.Errorf("matchBindings(%q, %q) = %v, want %v", tc.bindings, tc.key, got, tc.want)
		}
	}
}

// TestMatcherLongKey makes sure matching stays cheap on the longest keys
// and bindings a user can send: the driver runs it for every row a claim
// passes. Matching by trying every split for each '#' takes exponential time
// here and would not finish.
func TestMatcherLongKey(t *testing.T) {
	key := strings.Repeat("a.", MaxKeyLength/2-1) + "b" // 127 words
	if err := validateRoutingKey(key); err != nil {
		t.Fatal(err)
	}
	binding := strings.Repeat("#.a.", 12) + "#.c"
	if err := validateBinding(binding); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if matcher([]string{binding})(key) {
		t.Errorf("a binding ending in c matched a key ending in b")
	}
	if !matcher([]string{strings.Repeat("#.a.", 12) + "#.b"})(key) {
		t.Errorf("a binding ending in b did not match %q", key)
	}
	// A bound no descheduling on a loaded machine reaches: linear matching
	// takes microseconds, the exponential one would not finish.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("matching a %d-byte binding against a %d-byte key took %v", len(binding), len(key), d)
	}
}

func TestValidateBinding(t *testing.T) {
	valid := []string{"#", "*", "orders", "orders.*", "orders.#", "#.eu", "*.eu.#", "#.#", "a-b_c.D9", strings.Repeat("a", MaxKeyLength)}
	for _, b := range valid {
		if err := validateBinding(b); err != nil {
			t.Errorf("validateBinding(%q) = %v, want nil", b, err)
		}
	}
	invalid := []string{
		"", ".", "..", "orders.", ".orders", "orders..eu", // empty words
		"orders.e*", "orders.#x", "*x", "x#", "**", "##", // wildcards inside words
		"eu web", "eu\tweb", "eu/web", "eu,us", "eu|us", "eu+", // separators that are not '.'
		"x'; DROP TABLE stream_config; --", `"; --`, "a%", "a_%",
		"eu.\u00e9", "\u0430bc", // non-ASCII (Cyrillic a)
		"eu\x00", "eu\n", "eu\u200b", "\u202eeu", // control and invisible characters
		strings.Repeat("a", MaxKeyLength+1),
	}
	for _, b := range invalid {
		if err := validateBinding(b); !errors.Is(err, ErrInvalidName) {
			t.Errorf("validateBinding(%q) = %v, want ErrInvalidName", b, err)
		}
	}
}

func TestValidateRoutingKey(t *testing.T) {
	valid := []string{"", "orders", "orders.eu", "a-b_c.D9.x", "0", strings.Repeat("a", MaxKeyLength)}
	for _, k := range valid {
		if err := validateRoutingKey(k); err != nil {
			t.Errorf("validateRoutingKey(%q) = %v, want nil", k, err)
		}
	}
	invalid := []string{
		".", "orders.", ".orders", "orders..eu",
		"*", "#", "orders.*", "orders.#", "a*", // wildcards belong to bindings
		"eu web", "eu/web", "x'; DROP TABLE stream_config; --",
		"eu.\u00e9", "eu\x00", "eu\n", "eu\u200b",
		strings.Repeat("a", MaxKeyLength+1),
	}
	for _, k := range invalid {
		if err := validateRoutingKey(k); !errors.Is(err, ErrInvalidName) {
			t.Errorf("validateRoutingKey(%q) = %v, want ErrInvalidName", k, err)
		}
	}
}
