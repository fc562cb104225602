package memdriver

import (
	"cmp"
	"context"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.Subjects = (*Driver)(nil)

// subjectData is a free subject: its settings and its versions, which
// name their document by global id.
type subjectData struct {
	settings driver.RegistrySettings
	versions []driver.SubjectVersion
}

func (s *subjectData) clone() *subjectData {
	c := *s
	c.versions = slices.Clone(s.versions)
	return &c
}

// subject returns a subject to change, creating it.
func (b *db) subject(name string) *subjectData {
	s, ok := b.subjects[name]
	if !ok {
		s = &subjectData{}
		b.subjects[name] = s
	}
	return s
}

// withDocument fills a version's document from its global id.
func (b *db) withDocument(v driver.SubjectVersion) driver.SubjectVersion {
	doc := b.docs[v.ID]
	v.Fingerprint, v.Type, v.Schema = doc.Fingerprint, doc.Type, doc.Schema
	v.References = slices.Clone(v.References)
	return v
}

// versionsOf lists a subject's versions with their documents.
func (b *db) versionsOf(name string, deleted bool) []driver.SubjectVersion {
	var out []driver.SubjectVersion
	if s, ok := b.subjects[name]; ok {
		for _, v := range s.versions {
			if deleted || !v.Deleted {
				out = append(out, b.withDocument(v))
			}
		}
	}
	return out
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	var out driver.RegistrySettings
	err := d.read(ctx, func(b *db) error {
		if s, ok := b.subjects[p.Subject]; ok {
			out = s.settings
		}
		return nil
	})
	return out, err
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.write(ctx, nil, func(b *db) error {
		s := b.subjects[p.Subject]
		var set driver.RegistrySettings
		if s != nil {
			set = s.settings
		}
		if err := p.Update(&set); err != nil {
			return err
		}
		b.subject(p.Subject).settings = set
		return nil
	})
}

// RecordSubjectVersion implements driver.Subjects, with the writer held,
// by driver.RecordSubjectVersionIn over subjectSteps; p.Decide runs with
// the data lock let go (Driver.decide).
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	decide := p.Decide
	p.Decide = func(live []driver.SubjectVersion, subject, global driver.RegistrySettings) error {
		return d.decide(func() error { return decide(live, subject, global) })
	}
	err := d.write(ctx, nil, func(b *db) error {
		var err error
		out, created, err = driver.RecordSubjectVersionIn(ctx, subjectSteps{b}, p)
		err, _ = driver.FromCaller(err)
		return err
	})
	return out, created, err
}

// subjectSteps are driver.SubjectSteps over the store's data, with the
// writer already held.
type subjectSteps struct{ b *db }

func (s subjectSteps) LockSubject(_ context.Context, subject string) (driver.RegistrySettings, error) {
	var set driver.RegistrySettings
	if sd, ok := s.b.subjects[subject]; ok {
		set = sd.settings
	}
	return set, nil
}

func (s subjectSteps) Versions(_ context.Context, subject string) ([]driver.SubjectVersion, error) {
	return s.b.versionsOf(subject, true), nil
}

func (s subjectSteps) GlobalSettings(context.Context) (driver.RegistrySettings, error) {
	return s.b.settings[scopeKey{}], nil
}

func (s subjectSteps) AssignID(_ context.Context, rev driver.SchemaRevision) (int64, error) {
	return s.b.assignID(rev)
}

func (s subjectSteps) InsertVersion(_ context.Context, v driver.SubjectVersion) (driver.SubjectVersion, error) {
	sd := s.b.subject(v.Subject)
	stored := v
	stored.Schema, stored.References, stored.Deleted = nil, slices.Clone(v.References), false
	sd.versions = append(sd.versions, stored)
	slices.SortFunc(sd.versions, func(a, b driver.SubjectVersion) int { return cmp.Compare(a.Version, b.Version) })
	return s.b.withDocument(stored), nil
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	var out []driver.SubjectVersion
	err := d.read(ctx, func(b *db) error {
		out = b.versionsOf(p.Subject, p.Deleted)
		return nil
	})
	return out, err
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	var out []string
	err := d.read(ctx, func(b *db) error {
		for name := range b.subjects {
			if len(b.versionsOf(name, p.Deleted)) > 0 {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return nil
	})
	return out, err
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	var out []int
	err := d.write(ctx, nil, func(b *db) error {
		out = nil
		targets := driver.DeletionTargets(b.versionsOf(p.Subject, true), p.Version, p.Permanent)
		var users []driver.SubjectVersion
		for name := range b.subjects {
			for _, v := range b.versionsOf(name, true) {
				if slices.ContainsFunc(v.References, func(f driver.SubjectReference) bool {
					return f.Subject == p.Subject && slices.ContainsFunc(targets, func(t driver.SubjectVersion) bool { return t.Version == f.Version })
				}) {
					users = append(users, v)
				}
			}
		}
		slices.SortFunc(users, subjectOrder)
		if err := d.decide(func() error { return p.Decide(targets, users) }); err != nil {
			return err
		}
		s, ok := b.subjects[p.Subject]
		if !ok {
			return nil
		}
		for _, t := range targets {
			out = append(out, t.Version)
		}
		s.versions = slices.DeleteFunc(s.versions, func(v driver.SubjectVersion) bool {
			return p.Permanent && slices.Contains(out, v.Version)
		})
		for i, v := range s.versions {
			if slices.Contains(out, v.Version) {
				s.versions[i].Deleted = true
			}
		}
		if p.Permanent && p.Version == 0 {
			delete(b.subjects, p.Subject)
		}
		return nil
	})
	return out, err
}

func subjectOrder(a, b driver.SubjectVersion) int {
	return cmp.Or(cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Version, b.Version))
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	var out []driver.SubjectVersion
	err := d.read(ctx, func(b *db) error {
		for name := range b.subjects {
			for _, v := range b.versionsOf(name, true) {
				if v.ID == p.ID {
					out = append(out, v)
				}
			}
		}
		slices.SortFunc(out, subjectOrder)
		return nil
	})
	return out, err
}
