package driver

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// A soft-deleted revision is no match for a new registration and is not
// judged against, but its number is not given again.
func TestRecordRevisionSkipsDeleted(t *testing.T) {
	m := &memSteps{existing: []SchemaRevision{{Revision: 1, Fingerprint: "a"}, {Revision: 2, Fingerprint: "b", Deleted: true}}, id: 9}
	var judged []SchemaRevision
	out, created, err := RecordRevision(context.Background(), m, RecordSchemaParams{
		Revision: SchemaRevision{Fingerprint: "b"},
		Decide: func(existing []SchemaRevision, _ RevisionSettings) error {
			judged = existing
			return nil
		},
	})
	if err != nil || !created || out.Revision != 3 {
		t.Fatalf("RecordRevision = %+v, %v, %v; want revision 3 created", out, created, err)
	}
	if len(judged) != 1 || judged[0].Revision != 1 {
		t.Fatalf("Decide saw %+v; want revision 1 only", judged)
	}
}

// delSteps records what DeleteRevisionsIn asked of an engine.
type delSteps struct {
	memSteps
	inRows  map[int]bool
	readers []Reader
	users   map[int][]SchemaRevision
	removed []int
	perm    bool
	forgot  []int
}

func (d *delSteps) InRows(_ context.Context, _ int64, _, revision int) (bool, error) {
	return d.inRows[revision], nil
}

func (d *delSteps) Readers(context.Context, int64) ([]Reader, error) { return d.readers, nil }

func (d *delSteps) ReferencedBy(_ context.Context, p ReferencedByParams) ([]SchemaRevision, error) {
	return d.users[p.Revision], nil
}

func (d *delSteps) Remove(_ context.Context, _ int64, _ int, revisions []int, permanent bool) error {
	d.removed, d.perm = revisions, permanent
	return nil
}

func (d *delSteps) ForgetSettings(_ context.Context, _ int64, version int) error {
	d.forgot = append(d.forgot, version)
	return nil
}

func TestDeleteRevisionsIn(t *testing.T) {
	revs := []SchemaRevision{{Version: 2, Revision: 1}, {Version: 2, Revision: 2, Deleted: true}, {Version: 2, Revision: 3}}
	d := &delSteps{memSteps: memSteps{existing: revs}, inRows: map[int]bool{1: true},
		readers: []Reader{{Group: "g", Version: 2, Revision: 3}, {Group: "h", Version: 1, Revision: 1}},
		users:   map[int][]SchemaRevision{3: {{StreamID: 8, Version: 1, Revision: 1}}}}
	var saw RevisionDeletion
	refuse := errors.New("no")
	_, err := DeleteRevisionsIn(context.Background(), d, DeleteRevisionsParams{Version: 2, Revisions: []int{1, 2, 3, 4},
		Decide: func(x RevisionDeletion) error { saw = x; return refuse }})
	var ce CallerError
	if !errors.As(err, &ce) || !errors.Is(err, refuse) || d.removed != nil {
		t.Fatalf("a refusal: %v, removed %v; want the CallerError and nothing removed", err, d.removed)
	}
	want := RevisionDeletion{Targets: []SchemaRevision{revs[0], revs[2]}, Missing: []int{2, 4}, InRows: []int{1},
		Readers: []Reader{{Group: "g", Version: 2, Revision: 3}}, ReferencedBy: []SchemaRevision{{StreamID: 8, Version: 1, Revision: 1}}}
	if !reflect.DeepEqual(saw, want) {
		t.Fatalf("Decide saw %+v\nwant %+v", saw, want)
	}
	done, err := DeleteRevisionsIn(context.Background(), d, DeleteRevisionsParams{Version: 2, Permanent: true, Decide: func(RevisionDeletion) error { return nil }})
	if err != nil || !reflect.DeepEqual(done, []int{1, 2, 3}) || !reflect.DeepEqual(d.removed, []int{1, 2, 3}) || !d.perm {
		t.Fatalf("a permanent deletion of the version: %v, %v; removed %v permanent %v", done, err, d.removed, d.perm)
	}
	if !reflect.DeepEqual(d.forgot, []int{2}) {
		t.Fatalf("a permanent deletion of the version forgot the settings of versions %v; want [2]", d.forgot)
	}
	d.forgot = nil
	for _, p := range []DeleteRevisionsParams{{Version: 2, Revisions: []int{1}, Permanent: true}, {Version: 2}} {
		p.Decide = func(RevisionDeletion) error { return nil }
		if _, err := DeleteRevisionsIn(context.Background(), d, p); err != nil || d.forgot != nil {
			t.Fatalf("deletion %+v: %v; forgot %v, want the version's settings kept", p, err, d.forgot)
		}
	}
}
