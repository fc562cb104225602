package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// corpusFile is the local copy of the Apicurio corpus (see
// testdata/README.md); sharedCorpusFile is the project-wide original,
// relative to this package directory (core/schema → repo root → ../shared).
const (
	corpusFile       = "testdata/apicurio-jsonschema-compatibility.json"
	sharedCorpusFile = "../../../shared/testdata/apicurio-jsonschema-compatibility.json"
)

// corpusExceptions lists the cases, keyed "index:id", where Strict knowingly
// disagrees with the corpus, with the reason. The test fails if a listed
// case starts agreeing, so the list cannot go stale. It is empty: Strict
// agrees with all 145 cases.
var corpusExceptions = map[string]string{}

type corpusCase struct {
	ID            string          `json:"id"`
	Enabled       bool            `json:"enabled"`
	Compatibility string          `json:"compatibility"`
	Original      json.RawMessage `json:"original"`
	Updated       json.RawMessage `json:"updated"`
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	var doc struct {
		Tests []corpusCase `json:"tests"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("decode corpus: %v", err)
	}
	if len(doc.Tests) == 0 {
		t.Fatal("corpus has no tests")
	}
	return doc.Tests
}

// TestCorpusCopyMatchesShared keeps the local copy honest: it must be the
// file ../shared ships, byte for byte.
func TestCorpusCopyMatchesShared(t *testing.T) {
	shared, err := os.ReadFile(sharedCorpusFile)
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") != "true" {
		t.Logf("%s not present outside CI; only the local copy is tested", sharedCorpusFile)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, local) {
		t.Fatalf("%s differs from %s; copy the shared file again (cp %s %s)", corpusFile, sharedCorpusFile, sharedCorpusFile, corpusFile)
	}
}

// TestCorpus runs every Apicurio case under Strict with the semantics of
// testdata/README.md: "backward" → BACKWARD accepts and FORWARD refuses;
// "both" → BACKWARD, FORWARD and FULL accept; "none" → all three refuse.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	agree, seen := 0, map[string]bool{}
	for i, c := range cases {
		key := fmt.Sprintf("%d:%s", i, c.ID)
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			// Every case runs, "enabled": false or not: the testdata README
			// says all of them are valid expectations.
			problem := corpusDisagreement(t, c)
			reason, excepted := corpusExceptions[key]
			switch {
			case problem == "" && excepted:
				t.Errorf("case now agrees with the corpus; remove it from corpusExceptions (was: %s)", reason)
			case problem != "" && !excepted:
				t.Errorf("disagrees with the corpus (%s): %s", c.Compatibility, problem)
			case problem == "":
				agree++
			}
		})
	}
	for key := range corpusExceptions {
		if !seen[key] {
			t.Errorf("corpusExceptions lists %q, which is not in the corpus", key)
		}
	}
	t.Logf("corpus: %d cases, %d agree, %d listed exceptions", len(cases), agree, len(corpusExceptions))
}

// corpusDisagreement returns "" when Strict agrees with the case, else what
// went wrong.
func corpusDisagreement(t *testing.T, c corpusCase) string {
	orig, err := Parse(c.Original)
	if err != nil {
		return "parse original: " + err.Error()
	}
	upd, err := Parse(c.Updated)
	if err != nil {
		return "parse updated: " + err.Error()
	}
	verdict := func(l Level) *Report { return Check(l, []*Schema{orig}, upd, Strict) }
	var want map[Level]bool
	switch c.Compatibility {
	case "backward":
		want = map[Level]bool{Backward: true, Forward: false}
	case "both":
		want = map[Level]bool{Backward: true, Forward: true, Full: true}
	case "none":
		want = map[Level]bool{Backward: false, Forward: false, Full: false}
	default:
		t.Fatalf("unknown compatibility %q", c.Compatibility)
	}
	var msgs []string
	for _, l := range []Level{Backward, Forward, Full} {
		w, ok := want[l]
		if !ok {
			continue
		}
		r := verdict(l)
		if r.Compatible() != w {
			msgs = append(msgs, fmt.Sprintf("%s: got compatible=%v, want %v; %s", l, r.Compatible(), w, r))
		}
	}
	return strings.Join(msgs, "; ")
}
