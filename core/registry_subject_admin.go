package sqlstreams

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// SubjectLevel returns the compatibility level in force for a free
// subject and where it is set: Scope "subject" (its own), "registry" or
// "default". A subject need not have versions to have a level.
func (r *Registry) SubjectLevel(ctx context.Context, subject string) (Setting[schema.Level], error) {
	subjectSet, global, err := r.freeSettings(ctx, subject)
	if err != nil {
		return Setting[schema.Level]{}, err
	}
	level, scope := effectiveLevel(subjectSet, global)
	return Setting[schema.Level]{Value: level, Scope: subjectScopeName(scope)}, nil
}

// SubjectMode returns the mode in force for a free subject and where it
// is set, as SubjectLevel.
func (r *Registry) SubjectMode(ctx context.Context, subject string) (Setting[Mode], error) {
	subjectSet, global, err := r.freeSettings(ctx, subject)
	if err != nil {
		return Setting[Mode]{}, err
	}
	mode, scope := effectiveMode(subjectSet, global)
	return Setting[Mode]{Value: mode, Scope: subjectScopeName(scope)}, nil
}

func subjectScopeName(scope string) string {
	if scope == "stream" {
		return "subject"
	}
	return scope
}

func (r *Registry) freeSettings(ctx context.Context, subject string) (subjectSet, global driver.RegistrySettings, err error) {
	store, err := r.subjects()
	if err != nil {
		return subjectSet, global, err
	}
	if err := ValidSubject(subject); err != nil {
		return subjectSet, global, err
	}
	return r.subjectSettings(ctx, store, subject)
}

// SetSubjectLevel sets a free subject's own level, also before its first
// version; it applies to that subject only.
func (r *Registry) SetSubjectLevel(ctx context.Context, subject string, level schema.Level) error {
	if _, err := schema.ParseLevel(level.String()); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return r.updateSubject(ctx, subject, false, func(s *driver.RegistrySettings) { s.Level = level.String() })
}

// ClearSubjectLevel removes a free subject's own level.
func (r *Registry) ClearSubjectLevel(ctx context.Context, subject string) error {
	return r.updateSubject(ctx, subject, false, func(s *driver.RegistrySettings) { s.Level = "" })
}

// SetSubjectMode sets a free subject's own mode. IMPORT on a subject with
// versions needs force: importing next to versions the subject already
// has would mix two histories (Confluent refuses it the same way).
func (r *Registry) SetSubjectMode(ctx context.Context, subject string, mode Mode, force bool) error {
	m, err := ParseMode(string(mode))
	if err != nil {
		return err
	}
	if m == ModeImport && !force {
		store, err := r.subjects()
		if err != nil {
			return err
		}
		if live, err := r.liveVersions(ctx, store, subject); err != nil {
			return err
		} else if len(live) > 0 {
			return fmt.Errorf("%w: subject %q has %d version(s); IMPORT mode on a subject with versions needs force", ErrNotEmpty, subject, len(live))
		}
	}
	return r.updateSubject(ctx, subject, true, func(s *driver.RegistrySettings) { s.Mode = string(m) })
}

// ClearSubjectMode removes a free subject's own mode.
func (r *Registry) ClearSubjectMode(ctx context.Context, subject string) error {
	return r.updateSubject(ctx, subject, true, func(s *driver.RegistrySettings) { s.Mode = "" })
}

func (r *Registry) updateSubject(ctx context.Context, subject string, modeChange bool, change func(*driver.RegistrySettings)) error {
	store, err := r.subjects()
	if err != nil {
		return err
	}
	if err := ValidSubject(subject); err != nil {
		return err
	}
	_, global, err := r.subjectSettings(ctx, store, subject)
	if err != nil {
		return err
	}
	err = store.UpdateSubjectSettings(ctx, driver.UpdateSubjectSettingsParams{Subject: subject, Update: func(s *driver.RegistrySettings) error {
		if mode, scope := effectiveMode(*s, global); !modeChange && mode == ModeReadOnly {
			return subjectReadOnly(subject, scope, "change the compatibility level")
		}
		change(s)
		return nil
	}})
	if err != nil {
		return r.subjectError(subject, "change the settings of", err)
	}
	return nil
}

// DeleteSubjectVersion deletes one version of a free subject and returns
// it. Without permanent the version is soft-deleted: hidden from lookups,
// listings and compatibility checks, its id still served. With permanent a
// soft-deleted version is removed (ErrNotSoftDeleted when it was not
// soft-deleted first). A version another subject's version references is
// refused with ErrReferenced.
func (r *Registry) DeleteSubjectVersion(ctx context.Context, subject string, version int, permanent bool) (int, error) {
	if version < 1 {
		return 0, fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, version)
	}
	done, err := r.deleteSubject(ctx, subject, version, permanent)
	if err != nil {
		return 0, err
	}
	return done[0], nil
}

// DeleteSubject deletes every version of a free subject, as
// DeleteSubjectVersion does one, and returns their numbers. A permanent
// deletion also forgets the subject's level and mode.
func (r *Registry) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	return r.deleteSubject(ctx, subject, 0, permanent)
}

func (r *Registry) deleteSubject(ctx context.Context, subject string, version int, permanent bool) ([]int, error) {
	store, err := r.subjects()
	if err != nil {
		return nil, err
	}
	done, err := store.DeleteSubjectVersions(ctx, driver.DeleteSubjectVersionsParams{Subject: subject, Version: version, Permanent: permanent,
		Decide: func(targets, users []driver.SubjectVersion) error {
			return deletionRefused(subject, version, permanent, targets, users)
		}})
	if err != nil {
		return nil, r.subjectError(subject, "delete from", err)
	}
	return done, nil
}

// deletionRefused says why a deletion may not happen: nothing to delete,
// a permanent deletion of a live version, or references to a target.
func deletionRefused(subject string, version int, permanent bool, targets, users []driver.SubjectVersion) error {
	what := fmt.Sprintf("subject %q", subject)
	if version != 0 {
		what = fmt.Sprintf("subject %q version %d", subject, version)
	}
	if len(targets) == 0 {
		if version != 0 {
			return fmt.Errorf("sqlstreams: %s: %w (or it is soft-deleted already)", what, ErrSubjectVersionNotFound)
		}
		return fmt.Errorf("sqlstreams: %s: %w (or it is soft-deleted already)", what, ErrSubjectNotFound)
	}
	if permanent {
		for _, t := range targets {
			if !t.Deleted {
				return fmt.Errorf("sqlstreams: %s: version %d is %w; delete it without permanent first", what, t.Version, ErrNotSoftDeleted)
			}
		}
	}
	if len(users) > 0 {
		names := make([]string, len(users))
		for i, u := range users {
			names[i] = fmt.Sprintf("%s version %d", u.Subject, u.Version)
		}
		return fmt.Errorf("sqlstreams: %s: %w by %s; delete those first", what, ErrReferenced, strings.Join(names, ", "))
	}
	return nil
}

// bindSubjectRefs resolves the references of a document of type t to
// subject versions of the same type and pins their fingerprints into the
// registration.
func (r *Registry) bindSubjectRefs(ctx context.Context, store driver.Subjects, reg *registration, t schema.Type, refs []SubjectReference) error {
	seen := map[string]bool{}
	for _, ref := range refs {
		if ref.Name == "" || seen[ref.Name] {
			return fmt.Errorf("%w: reference name %q is empty or given twice", ErrInvalidOption, ref.Name)
		}
		seen[ref.Name] = true
		v, err := r.referenced(ctx, store, ref)
		if err != nil {
			return err
		}
		if vt := docType(v.Type); vt != t {
			return fmt.Errorf("%w: reference %q names subject %q version %d, a %s document; a %s document refers to %s documents only",
				ErrInvalidOption, ref.Name, ref.Subject, v.Version, vt, t, t)
		}
		reg.subjectRefs = append(reg.subjectRefs, driver.SubjectReference{Name: ref.Name, Subject: ref.Subject, Version: v.Version})
		reg.refPins = append(reg.refPins, v.Fingerprint)
	}
	return nil
}

// referenced finds the live subject version a reference names (the latest
// for version 0 or -1).
func (r *Registry) referenced(ctx context.Context, store driver.Subjects, ref SubjectReference) (driver.SubjectVersion, error) {
	live, err := r.liveVersions(ctx, store, ref.Subject)
	if err != nil {
		return driver.SubjectVersion{}, err
	}
	for i := len(live) - 1; i >= 0; i-- {
		if ref.Version <= 0 || live[i].Version == ref.Version {
			return live[i], nil
		}
	}
	return driver.SubjectVersion{}, fmt.Errorf("sqlstreams: reference %q: %w: subject %q version %d; register the referenced schema first",
		ref.Name, ErrReferenceNotFound, ref.Subject, ref.Version)
}

// bundleSubject inlines the subject versions a JSON Schema refers to,
// transitively, so the judge follows them like local definitions.
func (r *Registry) bundleSubject(ctx context.Context, store driver.Subjects, s *schema.Schema, refs []driver.SubjectReference) (*schema.Schema, error) {
	if len(refs) == 0 {
		return s, nil
	}
	return bundleRefs(s, refs, map[string]*schema.Schema{}, func(ref driver.SubjectReference) string { return ref.Name },
		func(ref driver.SubjectReference) (*schema.Schema, []driver.SubjectReference, error) {
			v, err := boundVersion(ctx, store, ref)
			if err != nil {
				return nil, nil, err
			}
			sub, err := schema.Parse(v.Schema)
			return sub, v.References, err
		})
}

// boundVersion is the subject version a stored reference is bound to,
// soft-deleted or not.
func boundVersion(ctx context.Context, store driver.Subjects, ref driver.SubjectReference) (driver.SubjectVersion, error) {
	all, err := store.SubjectVersions(ctx, driver.SubjectVersionsParams{Subject: ref.Subject, Deleted: true})
	if err != nil {
		return driver.SubjectVersion{}, classify(err)
	}
	i := slices.IndexFunc(all, func(v driver.SubjectVersion) bool { return v.Version == ref.Version })
	if i < 0 {
		return driver.SubjectVersion{}, fmt.Errorf("sqlstreams: reference %q: %w (subject %q version %d is gone)", ref.Name, ErrReferenceNotFound, ref.Subject, ref.Version)
	}
	return all[i], nil
}

// referencedTexts lists the documents refs reach, their own references
// followed, each after the ones it refers to: what a schema.ReferenceParser
// parses a document with.
func referencedTexts(ctx context.Context, store driver.Subjects, refs []driver.SubjectReference) ([]schema.Referenced, error) {
	var out []schema.Referenced
	done := map[string]bool{}
	var walk func(refs []driver.SubjectReference, depth int) error
	walk = func(refs []driver.SubjectReference, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: references nest deeper than 32 (a cycle?)", ErrInvalidOption)
		}
		for _, ref := range refs {
			if done[ref.Name] {
				continue
			}
			v, err := boundVersion(ctx, store, ref)
			if err != nil {
				return err
			}
			if err := walk(v.References, depth+1); err != nil {
				return err
			}
			done[ref.Name] = true
			out = append(out, schema.Referenced{Name: ref.Name, Text: v.Schema})
		}
		return nil
	}
	return out, walk(refs, 0)
}

// parseWithRefs parses a stored or candidate document of type t that has
// references, with the documents they reach.
func (r *Registry) parseWithRefs(ctx context.Context, store driver.Subjects, t schema.Type, text []byte, refs []driver.SubjectReference) (schema.Document, error) {
	f, ok := r.formats[t]
	if !ok {
		return nil, fmt.Errorf("%w: schema type %s is not enabled; enable it with sqlstreams.WithFormats (%s)", ErrInvalidOption, t, r.typeList())
	}
	rp, ok := f.(schema.ReferenceParser)
	if !ok {
		return nil, fmt.Errorf("%w: the %s format resolves no references; inline the referenced types", ErrInvalidOption, t)
	}
	texts, err := referencedTexts(ctx, store, refs)
	if err != nil {
		return nil, err
	}
	return rp.ParseReferences(text, texts)
}
