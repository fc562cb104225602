package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Comparison is two stored documents judged against each other at a
// level, A the existing one and B the later: the part the stream version
// diff and the free subject diff share.
type Comparison struct {
	Type schema.Type
	// ASchema and BSchema are the documents as shown: JSON indented, a
	// .proto text as registered.
	ASchema, BSchema string
	// Differences lists what a reader of B meets on data written with A,
	// each with its verdict (the format's own resolution rules).
	Differences []schema.Difference
	// Level is the level Problems were judged at: ?level=, else the one in
	// force for the stream or subject.
	Level       schema.Level
	LevelSource string
	// Problems is schema.Judge at Level with A as the existing document
	// and B as the candidate: what registering B after A would meet.
	Problems   []schema.Problem
	Compatible bool
	Levels     []schema.Level
}

func (c Comparison) view() view.Comparison {
	return view.Comparison{Type: string(c.Type), ASchema: view.SchemaText(c.ASchema), BSchema: view.SchemaText(c.BSchema),
		Level: c.Level.String(), LevelSource: c.LevelSource, Compatible: c.Compatible,
		Differences: view.DifferencesOf(c.Differences), Problems: view.ProblemsOf(c.Problems)}
}

// compare judges b after a with schema.Judge, as a registration would. A
// document of a format the client has not enabled is schema.Opaque, so
// the page says it cannot be judged rather than calling it compatible.
func compare(level schema.Level, source string, a, b schema.Document, aText, bText string) Comparison {
	c := Comparison{Type: b.Type(), ASchema: aText, BSchema: bText, Level: level, LevelSource: source, Levels: schema.Levels(),
		Differences: []schema.Difference{}}
	if a.Type() == b.Type() {
		c.Differences = append(c.Differences, b.ReadsFrom(a)...)
	}
	c.Problems = schema.Judge(level, []schema.Document{a}, b).Problems
	c.Compatible = len(c.Problems) == 0
	return c
}

// documentText is a stored document as a person reads it: Avro and JSON
// indented, Protobuf as registered.
func documentText(t schema.Type, text []byte) string {
	if t == schema.TypeProtobuf {
		return string(text)
	}
	return view.PrettyJSON(text)
}

// pickPair reads ?a= and ?b= among ids (in order), defaulting to the last
// two; what names the ids in the error ("revisions at v2").
func pickPair(r *http.Request, ids []int, what string) (a, b int, err error) {
	a, b = ids[max(len(ids)-2, 0)], ids[len(ids)-1]
	for _, side := range []struct {
		name string
		to   *int
	}{{"a", &a}, {"b", &b}} {
		s := r.URL.Query().Get(side.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || !slices.Contains(ids, n) {
			return 0, 0, fmt.Errorf("%w: %s=%q; %s are %s", errBadRequest, side.name, s, what, joinInts(ids))
		}
		*side.to = n
	}
	return a, b, nil
}

// judgePair judges b after a at ?level= (source "asked"), else at the
// level in force; load gives a document and its text as shown.
func judgePair(r *http.Request, a, b int, inForce func() (sqlstreams.Setting[schema.Level], error),
	load func(n int) (schema.Document, string, error)) (Comparison, error) {
	level, source, err := askedLevel(r, inForce)
	if err != nil {
		return Comparison{}, err
	}
	var docs [2]schema.Document
	var texts [2]string
	for i, n := range []int{a, b} {
		if docs[i], texts[i], err = load(n); err != nil {
			return Comparison{}, err
		}
	}
	return compare(level, source, docs[0], docs[1], texts[0], texts[1]), nil
}

// askedLevel is ?level= (source "asked"), else the level in force.
func askedLevel(r *http.Request, inForce func() (sqlstreams.Setting[schema.Level], error)) (schema.Level, string, error) {
	if ls := r.URL.Query().Get("level"); ls != "" {
		l, err := schema.ParseLevel(ls)
		if err != nil {
			return 0, "", fmt.Errorf("%w: %v", errBadRequest, err)
		}
		return l, "asked", nil
	}
	set, err := inForce()
	if err != nil {
		return 0, "", err
	}
	return set.Value, set.Scope, nil
}

// FreeSubjectView is a free subject on the registry page: its live
// versions, the latest of them, and its settings.
type FreeSubjectView struct {
	Subject  string
	Versions int
	Latest   sqlstreams.SubjectVersion
	Level    sqlstreams.Setting[schema.Level]
	Mode     sqlstreams.Setting[sqlstreams.Mode]
}

// freeSubjects lists the free subjects with a live version; a driver that
// keeps none has an empty list.
func freeSubjects(ctx context.Context, reg *sqlstreams.Registry) ([]FreeSubjectView, error) {
	names, err := reg.FreeSubjects(ctx, false)
	if errors.Is(err, sqlstreams.ErrNoSubjects) {
		return []FreeSubjectView{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]FreeSubjectView, 0, len(names))
	for _, name := range names {
		vs, err := reg.SubjectVersions(ctx, name, false)
		if errors.Is(err, sqlstreams.ErrSubjectNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		fs := FreeSubjectView{Subject: name, Versions: len(vs), Latest: vs[len(vs)-1]}
		if fs.Level, err = reg.SubjectLevel(ctx, name); err != nil {
			return nil, err
		}
		if fs.Mode, err = reg.SubjectMode(ctx, name); err != nil {
			return nil, err
		}
		out = append(out, fs)
	}
	return out, nil
}

// SubjectPage is a free subject: its settings and every version with its
// text and references, soft-deleted ones included and marked.
type SubjectPage struct {
	Subject  string
	Level    sqlstreams.Setting[schema.Level]
	Mode     sqlstreams.Setting[sqlstreams.Mode]
	Versions []sqlstreams.SubjectVersion
}

func (p SubjectPage) title() string { return "Subject · " + p.Subject }

func (p SubjectPage) document() any {
	out := view.SubjectPage{Subject: p.Subject, Level: view.LevelOf(p.Level), Mode: view.ModeOf(p.Mode), Versions: []view.SubjectVersion{}}
	for _, v := range p.Versions {
		sv := view.SubjectVersion{Version: v.Version, ID: v.ID, Type: string(v.Type), Fingerprint: v.Fingerprint, CreatedAt: view.Time(v.CreatedAt),
			Deleted: v.Deleted, References: []view.SubjectReference{}, Schema: view.SchemaText(documentText(v.Type, v.Text))}
		for _, ref := range v.References {
			sv.References = append(sv.References, view.SubjectReference(ref))
		}
		out.Versions = append(out.Versions, sv)
	}
	return out
}

// Live is the number of versions not soft-deleted: the compare link
// shows from two on.
func (p SubjectPage) Live() int {
	n := 0
	for _, v := range p.Versions {
		if !v.Deleted {
			n++
		}
	}
	return n
}

func (h *handler) subjectPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	if !h.hasRegistry {
		return nil, fmt.Errorf("%w: %w", errNotFound, sqlstreams.ErrNoRegistry)
	}
	reg := h.client.Registry()
	page := SubjectPage{Subject: r.PathValue("subject")}
	var err error
	if page.Versions, err = reg.SubjectVersions(ctx, page.Subject, true); err != nil {
		return nil, err
	}
	if page.Level, err = reg.SubjectLevel(ctx, page.Subject); err != nil {
		return nil, err
	}
	if page.Mode, err = reg.SubjectMode(ctx, page.Subject); err != nil {
		return nil, err
	}
	return page, nil
}

// SubjectDiffPage shows two versions of a free subject side by side,
// judged at a level as the stream version diff is.
type SubjectDiffPage struct {
	Subject  string
	Versions []int
	A, B     int
	Comparison
}

func (p SubjectDiffPage) title() string { return "Subject diff · " + p.Subject }

func (p SubjectDiffPage) document() any {
	return view.SubjectDiff{Subject: p.Subject, Versions: p.Versions, A: p.A, B: p.B, Comparison: p.Comparison.view()}
}

func (h *handler) subjectDiffPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	if !h.hasRegistry {
		return nil, fmt.Errorf("%w: %w", errNotFound, sqlstreams.ErrNoRegistry)
	}
	reg := h.client.Registry()
	subject := r.PathValue("subject")
	vs, err := reg.SubjectVersions(ctx, subject, true)
	if err != nil {
		return nil, err
	}
	page := SubjectDiffPage{Subject: subject}
	byVersion := map[int]sqlstreams.SubjectVersion{}
	for _, v := range vs {
		page.Versions = append(page.Versions, v.Version)
		byVersion[v.Version] = v
	}
	if page.A, page.B, err = pickPair(r, page.Versions, fmt.Sprintf("versions of subject %q", subject)); err != nil {
		return nil, err
	}
	page.Comparison, err = judgePair(r, page.A, page.B, func() (sqlstreams.Setting[schema.Level], error) { return reg.SubjectLevel(ctx, subject) },
		func(n int) (schema.Document, string, error) {
			d, err := reg.SubjectDocument(ctx, subject, n)
			return d, documentText(byVersion[n].Type, byVersion[n].Text), err
		})
	if err != nil {
		return nil, err
	}
	return page, nil
}
