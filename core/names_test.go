package sqlstreams

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

var nameCases = []struct {
	name  string
	valid bool
}{
	{"orders", true},
	{"orders.placed", true},
	{"orders.placed.v2", true},
	{"fraud-scoring", true},
	{"fraud_scoring-v2", true},
	{"a", true},
	{"0", true},
	{"9lives", true},
	{"A.B-C_D", true},
	{"orders.", true},   // the pattern allows a trailing dot
	{"orders..x", true}, // and repeated dots
	{strings.Repeat("a", MaxNameLength), true},

	{"", false},
	{strings.Repeat("a", MaxNameLength+1), false},
	{".orders", false}, // leading dot
	{"_orders", false}, // leading underscore
	{"-orders", false}, // leading dash
	{"orders placed", false},
	{" orders", false},
	{"orders ", false},
	{"orders/placed", false},
	{"orders:placed", false},
	{"orders*", false},
	{"orders#", false},
	{"x'; DROP TABLE stream_config; --", false},
	{`orders"`, false},
	{"orders;", false},
	{"orders`", false},
	{"orders\\", false},
	{"orders%", false},
	{"orders\x00", false},
	{"orders\n", false},
	{"orders\r", false},
	{"orders\t", false},
	{"\x7f", false},
	{"orders\u200b", false}, // zero-width space
	{"\u202eorders", false}, // right-to-left override
	{"orders\u0085", false}, // next line (C1 control)
	{"\u0430rders", false},  // Cyrillic a
	{"ordérs", false},
	{"\xff", false}, // invalid UTF-8
}

func TestValidateName(t *testing.T) {
	for _, tc := range nameCases {
		for _, kind := range []string{"stream", "group"} {
			err := validateName(kind, tc.name)
			if tc.valid && err != nil {
				t.Errorf("validateName(%s, %q) = %v, want nil", kind, tc.name, err)
			}
			if !tc.valid {
				if !errors.Is(err, ErrInvalidName) {
					t.Errorf("validateName(%s, %q) = %v, want ErrInvalidName", kind, tc.name, err)
				} else if !strings.Contains(err.Error(), kind) {
					t.Errorf("validateName(%s, %q) error %q does not say which name", kind, tc.name, err)
				}
			}
		}
	}
}

// TestNamePatternAgrees makes sure the documented pattern is the rule
// enforced, on the table and on random strings of interesting bytes.
func TestNamePatternAgrees(t *testing.T) {
	re := regexp.MustCompile(NamePattern)
	check := func(name string) {
		t.Helper()
		if got, want := validateName("stream", name) == nil, re.MatchString(name); got != want {
			t.Errorf("name %q: validateName accepts it: %v; NamePattern matches it: %v", name, got, want)
		}
	}
	for _, tc := range nameCases {
		check(tc.name)
		if re.MatchString(tc.name) != tc.valid {
			t.Errorf("NamePattern on %q: %v, want %v", tc.name, !tc.valid, tc.valid)
		}
	}
	alphabet := []byte("aZ09._- '\";\x00\n\xc3\xa9\xe2\x80\x8b#*/")
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
	for _, n := range []int{MaxNameLength - 1, MaxNameLength, MaxNameLength + 1} {
		check(strings.Repeat("x", n))
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"", "acct-1", "any thing: goes / here", "ümlaut", strings.Repeat("k", MaxKeyLength)} {
		if err := validateKey(k); err != nil {
			t.Errorf("validateKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{strings.Repeat("k", MaxKeyLength+1), "\xff\xfe"} {
		if err := validateKey(k); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("validateKey(%q) = %v, want ErrInvalidMessage", k, err)
		}
	}
}

// TestPartitionForKey pins the hash every driver shares: FNV-1a (32-bit)
// of the key modulo the partition count.
func TestPartitionForKey(t *testing.T) {
	for _, tc := range []struct {
		key        string
		partitions int
		want       int
	}{
		{"", 8, 5},       // 2166136261 % 8
		{"a", 8, 4},      // 3826002220 % 8
		{"acct-1", 8, 4}, // 2353143644 % 8
		{"acct-1", 3, 2},
		{"orders", 3, 2}, // 845059820 % 3
		{"anything", 1, 0},
	} {
		if got := PartitionForKey(tc.key, tc.partitions); got != tc.want {
			t.Errorf("PartitionForKey(%q, %d) = %d, want %d", tc.key, tc.partitions, got, tc.want)
		}
	}
	for _, n := range []int{1, 2, 7, MaxPartitions} {
		for i := range 200 {
			k := strings.Repeat("k", i)
			if p := PartitionForKey(k, n); p < 0 || p >= n {
				t.Fatalf("PartitionForKey(%q, %d) = %d, out of range", k, n, p)
			}
		}
	}
}

// validateRoutingKey scans a key once, without splitting it; each kind of
// bad key keeps its own message.
func TestRoutingKeyMessages(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want string // "" for valid, else a piece of the message
	}{
		{"", ""}, {"eu", ""}, {"eu.web", ""}, {"a.b-c.d_e.9", ""},
		{".eu", "empty word"}, {"eu.", "empty word"}, {"eu..web", "empty word"}, {".", "empty word"},
		{"eu web", "has ' '"}, {"eu.w*b", "has '*'"}, {"eu.#", "has '#'"}, {"é", "has"},
		{strings.Repeat("a", MaxKeyLength+1), "the limit"},
	} {
		err := validateRoutingKey(tc.key)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("routing key %q: %v; want it valid", tc.key, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("routing key %q: %v; want ErrInvalidName saying %q", tc.key, err, tc.want)
		}
	}
}
