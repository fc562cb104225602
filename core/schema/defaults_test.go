package schema_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

type withDefaults struct {
	Currency string `json:"currency" sqlstreams:"default=\"EUR\""`
	Nested   struct {
		Retries int `json:"retries" sqlstreams:"default=3"`
	} `json:"nested"`
	Skipped int    `json:"-" sqlstreams:"default=9"`
	Pointer *inner `json:"pointer"`
	inner
}

type inner struct {
	Channel string `json:"channel" sqlstreams:"default=\"web\""`
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	got, err := schema.Defaults(reflect.TypeFor[withDefaults]())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"[0]": `"EUR"`, "[1 0]": `3`, "[4 0]": `"web"`}
	if len(got) != len(want) {
		t.Fatalf("got %d defaults %+v, want %d", len(got), got, len(want))
	}
	for _, d := range got {
		key := fmt.Sprint(d.Index)
		if want[key] != string(d.JSON) {
			t.Errorf("default at %s = %s, want %s", key, d.JSON, want[key])
		}
	}
}
