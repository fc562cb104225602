package sqlstreams

// Fuzz targets for the parsers of outside input in core (issue #25 §5).
// A plain `go test` runs their seeds (f.Add and testdata/fuzz/FuzzX). To
// fuzz every target of the repository for ten minutes each, one at a time,
// from the repository root:
//
//	for t in core:FuzzBinding core:FuzzName core:FuzzMessageKey \
//	    core/schema:FuzzParse core/schema:FuzzDiff core/schema:FuzzReflect core/schema:FuzzCheckFile \
//	    contrib/dsn:FuzzParse .tests/drivers/ccompat:FuzzRequestBody \
//	    driver/mysql:FuzzOpenDSN driver/postgres:FuzzOpenURL; do
//	  go test -C "${t%%:*}" -run '^$' -fuzz "^${t##*:}\$" -fuzztime 10m . || break
//	done

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The reference grammars, written independently of the hand-rolled
// validators: a regular expression for each.
var (
	refRoutingKey = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	refBinding    = regexp.MustCompile(`^([A-Za-z0-9_-]+|\*|#)(\.([A-Za-z0-9_-]+|\*|#))*$`)
	refName       = regexp.MustCompile(NamePattern)
)

// refMatcher translates a binding into a regular expression over the key
// with a '.' before every word: a literal word is `\.word`, '*' one word and
// '#' any number of words. RE2 runs it in linear time, and it shares no code
// with matchWords.
func refMatcher(binding string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, w := range strings.Split(binding, ".") {
		switch w {
		case "*":
			b.WriteString(`\.[^.]+`)
		case "#":
			b.WriteString(`(?:\.[^.]+)*`)
		default:
			b.WriteString(`\.` + regexp.QuoteMeta(w))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// FuzzBinding checks bindings and routing keys: validation agrees with the
// reference grammar and fails only with ErrInvalidName, and a valid set of
// bindings (separated by ',' in the input) selects a valid key exactly when
// one of their reference expressions matches it.
func FuzzBinding(f *testing.F) {
	for _, s := range [][2]string{
		{"orders.#", "orders"}, {"#", ""}, {"*", ""}, {"*.eu", "orders.eu"}, {"a.#.b.#.c", "a.x.b.y.y.c"},
		{"#.#.#.#.#.#.#.#.#.#.#.#.x", "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.y"},
		{"eu.#,payments.*", "payments.eu"}, {"a..b", "a..b"}, {".", "."}, {"a.", "a."}, {"**", "x"},
		{"a.#b", "a.b"}, {"ü", "ü"}, {"a b", "a b"}, {"", ""}, {"#.*.#", "x"}, {strings.Repeat("a", 256), strings.Repeat("a", 256)},
		{"x,", "x"}, {"*.*.#", "a.b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, bindings, key string) {
		keyErr := validateRoutingKey(key)
		if keyErr != nil && !errors.Is(keyErr, ErrInvalidName) {
			t.Fatalf("validateRoutingKey(%q) = %v; want ErrInvalidName", key, keyErr)
		}
		keyOK := key == "" || len(key) <= MaxKeyLength && refRoutingKey.MatchString(key)
		if (keyErr == nil) != keyOK {
			t.Fatalf("validateRoutingKey(%q) = %v; the reference grammar says valid=%v", key, keyErr, keyOK)
		}
		list := strings.Split(bindings, ",")
		for _, b := range list {
			err := validateBinding(b)
			if err != nil && !errors.Is(err, ErrInvalidName) {
				t.Fatalf("validateBinding(%q) = %v; want ErrInvalidName", b, err)
			}
			ok := len(b) <= MaxKeyLength && refBinding.MatchString(b)
			if (err == nil) != ok {
				t.Fatalf("validateBinding(%q) = %v; the reference grammar says valid=%v", b, err, ok)
			}
			if err != nil {
				return
			}
		}
		if keyErr != nil {
			return
		}
		if key != "" && !matchBindings([]string{key}, key) {
			t.Fatalf("the binding %q does not select the same routing key", key)
		}
		want := false
		for _, b := range list {
			want = want || refMatcher(b).MatchString(dotted(key))
		}
		if got := matchBindings(list, key); got != want {
			t.Fatalf("bindings %q on key %q: matcher says %v, the reference says %v", list, key, got, want)
		}
	})
}

// dotted puts a '.' before every word of a routing key; "" has no words.
func dotted(key string) string {
	if key == "" {
		return ""
	}
	return "." + key
}

// FuzzName checks stream and group names: validation agrees with
// NamePattern, fails only with ErrInvalidName naming the kind, and a valid
// name round-trips through quoting unchanged (safe to print and to pass on a
// command line).
func FuzzName(f *testing.F) {
	for _, s := range []string{"orders", "orders.eu-1_x", "", ".a", "_a", "-a", "a..b", "a b", "é", "a\x00",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "A9.", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, kind := range []string{"stream", "group"} {
			err := validateName(kind, name)
			if want := refName.MatchString(name); (err == nil) != want {
				t.Fatalf("validateName(%s, %q) = %v; NamePattern says valid=%v", kind, name, err, want)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), kind) {
					t.Fatalf("validateName(%s, %q) = %v; want ErrInvalidName naming the %s", kind, name, err, kind)
				}
				continue
			}
			if q := strconv.Quote(name); q != `"`+name+`"` {
				t.Fatalf("valid name %q quotes as %s", name, q)
			}
			if strings.ContainsAny(name, " \t\n\"'$`\\/") {
				t.Fatalf("valid name %q holds a character a shell or a path treats specially", name)
			}
		}
	})
}

// FuzzMessageKey checks message keys: valid exactly when at most
// MaxKeyLength bytes of UTF-8 without NUL, and refused with
// ErrInvalidMessage otherwise.
func FuzzMessageKey(f *testing.F) {
	for _, s := range []string{"", "order-1", "ü", "\xff", "a\x00b", strings.Repeat("k", 255), strings.Repeat("k", 256), strings.Repeat("ü", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := validateKey(key)
		want := len(key) <= MaxKeyLength && utf8.ValidString(key) && !strings.Contains(key, "\x00")
		if (err == nil) != want {
			t.Fatalf("validateKey(%q) = %v; want valid=%v", key, err, want)
		}
		if err != nil && !errors.Is(err, ErrInvalidMessage) {
			t.Fatalf("validateKey(%q) = %v; want ErrInvalidMessage", key, err)
		}
	})
}
