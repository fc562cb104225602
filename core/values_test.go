package sqlstreams

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{`1`, 0},
		{`[]`, 1},
		{`{"a":[{"b":[]}]}`, 4},
		{`["[[[", "]]]"]`, 1},       // brackets inside strings do not count
		{`["\"[[", {"k\\":[]}]`, 3}, // escaped quotes and backslashes
		{strings.Repeat("[", 5) + strings.Repeat("]", 5), 5},
	} {
		if got := jsonDepth([]byte(tc.doc)); got != tc.want {
			t.Errorf("jsonDepth(%s) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}

func TestValidatePayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"plain", []byte(`{"a":1}`), true},
		{"NUL escape", []byte(`{"a":"\u0000"}`), true},
		{"at the depth limit", []byte(strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)), true},
		{"past the depth limit", []byte(strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)), false},
		{"invalid UTF-8", []byte("\"\xc3\x28\""), false},
		{"too big", make([]byte, MaxPayloadBytes+1), false},
		{"many brackets in strings", []byte(`{"a":"` + strings.Repeat("[{", MaxJSONDepth) + `"}`), true},
		{"many brackets, shallow", []byte(strings.Repeat(`[],`, MaxJSONDepth) + `[]`), true},
	} {
		err := validatePayload("payload", tc.data)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidMessage)) {
			t.Errorf("%s: %v; want ok=%v (or ErrInvalidMessage)", tc.name, err, tc.ok)
		}
		// The produce path's check without an error agrees.
		if got := payloadValid(tc.data); got != tc.ok {
			t.Errorf("%s: payloadValid = %v; want %v", tc.name, got, tc.ok)
		}
	}
}

func TestValidateHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"none", nil, true},
		{"empty value", map[string]string{"a": ""}, true},
		{"empty name", map[string]string{"": "v"}, false},
		{"NUL in value", map[string]string{"a": "x\x00"}, false},
		{"NUL in name", map[string]string{"a\x00": "x"}, false},
		{"invalid UTF-8", map[string]string{"a": "\xff"}, false},
		{"at the size limit", map[string]string{"a": strings.Repeat("v", MaxHeaderBytes-1)}, true},
		{"over the size limit", map[string]string{"a": strings.Repeat("v", MaxHeaderBytes)}, false},
	} {
		err := validateHeaders(tc.headers)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidMessage)) {
			t.Errorf("%s: %v; want ok=%v (or ErrInvalidMessage)", tc.name, err, tc.ok)
		}
	}
}

func TestUnionBindings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		stored, extra []string
		want          []string
	}{
		{"joining with none keeps the group's", []string{"eu.#"}, nil, []string{"eu.#"}},
		{"a group reading every key stays so", nil, []string{"eu.#"}, nil},
		{"widening adds", []string{"eu.#"}, []string{"eu.#", "us.#"}, []string{"eu.#", "us.#"}},
		{"order kept, no duplicates", []string{"b", "a"}, []string{"a", "c"}, []string{"b", "a", "c"}},
	} {
		if got := unionBindings(tc.stored, tc.extra); !slices.Equal(got, tc.want) {
			t.Errorf("%s: unionBindings(%v, %v) = %v, want %v", tc.name, tc.stored, tc.extra, got, tc.want)
		}
	}
	if got := unionVersions([]int{3, 1}, []int{2, 1}); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("unionVersions = %v, want [1 2 3]", got)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	raw := errors.New("pq: something the engine said")
	if err := classify(raw); !errors.Is(err, ErrDatabase) || !errors.Is(err, raw) {
		t.Errorf("classify(raw) = %v; want ErrDatabase wrapping the engine error", err)
	}
	for _, kept := range []error{ErrInvalidMessage, ErrUnavailable, ErrLeaseLost} {
		if err := classify(kept); err != kept {
			t.Errorf("classify(%v) = %v; want it unchanged", kept, err)
		}
	}
	se := &SettleError{Op: "ack", Lost: []int64{3}, AlreadySettled: []int64{4}}
	if !errors.Is(se, ErrLeaseLost) || !errors.Is(se, ErrAlreadySettled) || errors.Is(&SettleError{Lost: []int64{1}}, ErrAlreadySettled) {
		t.Errorf("SettleError matching is wrong: %v", se)
	}
}
