package sqlstreams

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ptrJSON, ptrText and ptrJSONTo marshal themselves on their pointer
// receiver only: encoding/json calls them for addressable values only.
type ptrJSON struct{ N int }

func (p *ptrJSON) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

type ptrText struct{ N int }

func (p *ptrText) MarshalText() ([]byte, error) { return []byte("ptr"), nil }

type valJSON struct{ N int }

func (v valJSON) MarshalJSON() ([]byte, error) { return []byte(`"val"`), nil }

type plainOrder struct {
	ID    string            `json:"id"`
	Items []int64           `json:"items"`
	At    time.Time         `json:"at"`
	Tags  map[string]string `json:"tags"`
	Money struct {
		Cents int64 `json:"cents"`
	} `json:"money"`
	ByVal    valJSON   `json:"by_val"`
	Behind   *ptrJSON  `json:"behind"`   // behind a pointer: addressable either way
	InSlice  []ptrJSON `json:"in_slice"` // slice elements: addressable either way
	InMap    map[string]ptrJSON
	InIface  any
	internal ptrJSON //lint:ignore U1000 the test shows an unexported field is never encoded
}

type withPtrField struct {
	A ptrJSON `json:"a"`
}

type withPtrTextArray struct {
	A [2]ptrText `json:"a"`
}

type withEmbedded struct {
	ptrJSON
	B int
}

// TestEncodesByPointer: a value is encoded through a pointer only when that
// writes the same bytes as encoding the value.
func TestEncodesByPointer(t *testing.T) {
	t.Parallel()
	v := plainOrder{ID: "o-1", Items: []int64{1, 2}, At: time.Unix(1700000000, 0).UTC(), Tags: map[string]string{"a": "<b>"},
		Behind: &ptrJSON{1}, InSlice: []ptrJSON{{2}}, InMap: map[string]ptrJSON{"k": {3}}, InIface: ptrJSON{4}}
	v.Money.Cents = 995
	for _, tc := range []struct {
		name  string
		value any // a pointer to the value
		want  bool
	}{
		{"plain struct with time, maps, slices, pointers and interfaces", &v, true},
		{"a field with a pointer-receiver MarshalJSON", &withPtrField{A: ptrJSON{1}}, false},
		{"an array of a pointer-receiver MarshalText", &withPtrTextArray{}, false},
		{"an embedded pointer-receiver MarshalJSON", &withEmbedded{B: 1}, false},
		{"the type itself", &ptrJSON{1}, false},
		{"a value-receiver MarshalJSON", &valJSON{1}, true},
		{"a pointer type", &[]*ptrJSON{{1}}, true},
		{"an int", new(int), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rv := reflect.ValueOf(tc.value)
			if got := encodesByPointer(rv.Type().Elem()); got != tc.want {
				t.Fatalf("encodesByPointer(%v) = %v, want %v", rv.Type().Elem(), got, tc.want)
			}
			byValue, err := json.Marshal(rv.Elem().Interface())
			if err != nil {
				t.Fatal(err)
			}
			byPointer, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			// Where it says yes the bytes are the same; where it says no
			// they differ, which is why.
			if same := bytes.Equal(byValue, byPointer); same != tc.want {
				t.Errorf("by value %s, by pointer %s: same %v, want %v", byValue, byPointer, same, tc.want)
			}
		})
	}
	if !strings.Contains(string(mustJSON(t, &v)), `"in_slice":["ptr"]`) {
		t.Errorf("slice elements are addressable either way: %s", mustJSON(t, v))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
