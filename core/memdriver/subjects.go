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

// RecordSubjectVersion implements driver.Subjects, with the writer held.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	err := d.write(ctx, nil, func(b *db) error {
		in := p.Version
		all := b.versionsOf(in.Subject, true)
		live := driver.Live(all)
		for _, v := range live {
			if v.Fingerprint == in.Fingerprint {
				out = v
				return nil
			}
		}
		var set driver.RegistrySettings
		if s, ok := b.subjects[in.Subject]; ok {
			set = s.settings
		}
		if err := d.decide(func() error { return p.Decide(live, set, b.settings[scopeKey{}]) }); err != nil {
			return err
		}
		number, err := driver.NextSubjectVersion(all, in.Version)
		if err != nil {
			return err
		}
		out = in
		out.Type = cmp.Or(in.Type, "JSON")
		out.Version, out.CreatedAt, out.Deleted = number, micro(in.CreatedAt), false
		if out.ID, err = b.assignID(driver.SchemaRevision{Fingerprint: out.Fingerprint, Type: out.Type, Schema: out.Schema, CreatedAt: out.CreatedAt, ID: in.ID}); err != nil {
			return err
		}
		s := b.subject(in.Subject)
		stored := out
		stored.Schema, stored.References = nil, slices.Clone(in.References)
		s.versions = append(s.versions, stored)
		slices.SortFunc(s.versions, func(a, b driver.SubjectVersion) int { return cmp.Compare(a.Version, b.Version) })
		out = b.withDocument(stored)
		created = true
		return nil
	})
	return out, created, err
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
