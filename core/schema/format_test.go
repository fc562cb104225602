package schema

import (
	"testing"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Type
		ok   bool
	}{
		{"", TypeJSON, true},
		{"json", TypeJSON, true},
		{" Avro ", TypeAvro, true},
		{"PROTOBUF", TypeProtobuf, true},
		{"AV RO", "", false},
		{"avro-2", "", false},
	} {
		got, err := ParseType(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseType(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFingerprintCoversTheType(t *testing.T) {
	s, err := Parse([]byte(`{"type":"string"}`))
	if err != nil {
		t.Fatal(err)
	}
	j := JSONDocument(s, GoAware)
	if Fingerprint(j) != s.Fingerprint() {
		t.Errorf("a JSON document's fingerprint %s is not its schema's %s", Fingerprint(j), s.Fingerprint())
	}
	o := Opaque(TypeAvro, s.Canonical())
	if Fingerprint(o) == Fingerprint(j) {
		t.Error("the same text as AVRO and as JSON has one fingerprint")
	}
}

func TestJudgeAcrossTypes(t *testing.T) {
	s, _ := Parse([]byte(`{"type":"string"}`))
	j := JSONDocument(s, GoAware)
	a := Opaque(TypeAvro, []byte(`"string"`))
	for _, tc := range []struct {
		level    Level
		problems int
	}{
		{None, 0},
		{Backward, 1},
		{Forward, 1},
		{Full, 2},
		{FullTransitive, 4},
	} {
		r := Judge(tc.level, []Document{j, j}, a)
		if len(r.Problems) != tc.problems {
			t.Errorf("%s: %d problems, want %d: %v", tc.level, len(r.Problems), tc.problems, r)
		}
		for _, p := range r.Problems {
			if p.Kind != SchemaTypeChanged || p.Compatible {
				t.Errorf("%s: problem %v; want an incompatible %s", tc.level, p, SchemaTypeChanged)
			}
		}
	}
	if r := Judge(Full, []Document{j}, JSONDocument(s, GoAware)); !r.Compatible() {
		t.Errorf("a JSON schema against itself: %v", r)
	}
}
