package driver

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// memSteps records what RecordRevision asked of an engine.
type memSteps struct {
	existing                []SchemaRevision
	version, stream, global RegistrySettings
	id                      int64
	idErr                   error
	calls                   []string
	inserted                []SchemaRevision
}

func (m *memSteps) LockStream(context.Context, int64) (RegistrySettings, error) {
	m.calls = append(m.calls, "lock")
	return m.stream, nil
}

func (m *memSteps) Revisions(context.Context, int64, int) ([]SchemaRevision, error) {
	m.calls = append(m.calls, "revisions")
	return m.existing, nil
}

func (m *memSteps) Settings(_ context.Context, streamID int64, version int) (RegistrySettings, error) {
	m.calls = append(m.calls, "settings")
	switch {
	case streamID == 0 && version == 0:
		return m.global, nil
	case version != 0:
		return m.version, nil
	}
	return RegistrySettings{}, errors.New("settings of a whole stream asked for after the lock")
}

func (m *memSteps) AssignID(_ context.Context, rev SchemaRevision) (int64, error) {
	m.calls = append(m.calls, "id")
	return m.id, m.idErr
}

func (m *memSteps) InsertRevision(_ context.Context, rev SchemaRevision) error {
	m.calls = append(m.calls, "insert")
	m.inserted = append(m.inserted, rev)
	return nil
}

func allow([]SchemaRevision, RevisionSettings) error { return nil }

func TestRecordRevisionNumbersAndWrites(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))
	m := &memSteps{existing: []SchemaRevision{{Revision: 1, Fingerprint: "a"}, {Revision: 3, Fingerprint: "b"}}, id: 42,
		version: RegistrySettings{Level: "NONE"}, stream: RegistrySettings{Level: "FULL"}, global: RegistrySettings{Mode: "READWRITE"}}
	var judged []SchemaRevision
	var saw RevisionSettings
	out, created, err := RecordRevision(context.Background(), m, RecordSchemaParams{
		Revision: SchemaRevision{StreamID: 7, Version: 2, Fingerprint: "c", CreatedAt: at},
		Decide: func(existing []SchemaRevision, set RevisionSettings) error {
			judged, saw = existing, set
			return nil
		},
	})
	if err != nil || !created {
		t.Fatalf("RecordRevision = %v, %v", created, err)
	}
	want := SchemaRevision{StreamID: 7, Version: 2, Revision: 4, Fingerprint: "c", Type: "JSON", ID: 42,
		CreatedAt: time.Date(2026, 1, 2, 2, 4, 5, 6000, time.UTC)}
	if !reflect.DeepEqual(out, want) || !reflect.DeepEqual(m.inserted, []SchemaRevision{want}) {
		t.Fatalf("recorded %+v, inserted %+v; want %+v", out, m.inserted, want)
	}
	if want := (RevisionSettings{Version: m.version, Stream: m.stream, Global: m.global}); len(judged) != 2 || saw != want {
		t.Fatalf("Decide saw %v, %+v; want 2 revisions, %+v", judged, saw, want)
	}
	if got := []string{"lock", "revisions", "settings", "settings", "id", "insert"}; !reflect.DeepEqual(m.calls, got) {
		t.Fatalf("steps %v, want %v", m.calls, got)
	}
}

func TestRecordRevisionSameFingerprintWritesNothing(t *testing.T) {
	m := &memSteps{existing: []SchemaRevision{{Revision: 1, Fingerprint: "a", ID: 5}}}
	out, created, err := RecordRevision(context.Background(), m, RecordSchemaParams{
		Revision: SchemaRevision{Fingerprint: "a"},
		Decide: func([]SchemaRevision, RevisionSettings) error {
			t.Fatal("Decide ran for a known fingerprint")
			return nil
		},
	})
	if err != nil || created || out.ID != 5 || len(m.inserted) != 0 {
		t.Fatalf("RecordRevision = %+v, %v, %v; inserted %v", out, created, err, m.inserted)
	}
}

func TestRecordRevisionCallerErrors(t *testing.T) {
	refused := errors.New("incompatible")
	m := &memSteps{}
	_, _, err := RecordRevision(context.Background(), m, RecordSchemaParams{
		Revision: SchemaRevision{Fingerprint: "a"},
		Decide:   func([]SchemaRevision, RevisionSettings) error { return refused },
	})
	if inner, ok := FromCaller(err); !ok || inner != refused || len(m.inserted) != 0 {
		t.Fatalf("a refusal came back as %v (caller's: %v), inserted %v", err, ok, m.inserted)
	}
	m = &memSteps{existing: []SchemaRevision{{Revision: 2, Fingerprint: "a"}}}
	_, _, err = RecordRevision(context.Background(), m, RecordSchemaParams{Revision: SchemaRevision{Fingerprint: "b", Revision: 2}, Decide: allow})
	if _, ok := FromCaller(err); !ok || !errors.Is(err, ErrRevisionTaken) || len(m.inserted) != 0 {
		t.Fatalf("a revision number taken came back as %v, inserted %v", err, m.inserted)
	}
	m = &memSteps{id: 9, idErr: IDConflict(3, 9)}
	_, _, err = RecordRevision(context.Background(), m, RecordSchemaParams{Revision: SchemaRevision{Fingerprint: "b", ID: 3}, Decide: allow})
	if _, ok := FromCaller(err); !ok || !errors.Is(err, ErrSchemaIDTaken) || len(m.inserted) != 0 {
		t.Fatalf("an id taken came back as %v, inserted %v", err, m.inserted)
	}
}

func TestNextRevision(t *testing.T) {
	two := []SchemaRevision{{Revision: 1}, {Revision: 2}}
	for _, c := range []struct {
		existing     []SchemaRevision
		wanted, next int
		taken        bool
	}{
		{nil, 0, 1, false},
		{two, 0, 3, false},
		{two, 3, 3, false},
		{two, 7, 7, false},
		{two, 2, 0, true},
		{nil, 4, 4, false},
	} {
		next, err := NextRevision(c.existing, c.wanted)
		if next != c.next || errors.Is(err, ErrRevisionTaken) != c.taken {
			t.Errorf("NextRevision(%d revisions, %d) = %d, %v; want %d, taken %v", len(c.existing), c.wanted, next, err, c.next, c.taken)
		}
	}
}

func TestIDConflict(t *testing.T) {
	if err := IDConflict(0, 5); err != nil {
		t.Errorf("no id asked for: %v", err)
	}
	if err := IDConflict(5, 5); err != nil {
		t.Errorf("the schema's own id: %v", err)
	}
	if err := IDConflict(4, 5); !errors.Is(err, ErrSchemaIDTaken) {
		t.Errorf("another id: %v", err)
	}
	if err := IDOfOther(4); !errors.Is(err, ErrSchemaIDTaken) {
		t.Errorf("an id of another schema: %v", err)
	}
}
