package sqlstreams

import (
	"context"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// A stream version ({stream}-v{N} to a Confluent client) has a level and a
// mode of its own, as a free subject has: its revisions are judged by the
// version's own level, else the stream's, else the registry-wide one, else
// BACKWARD, and refused by the version's own mode first. A version is a
// compatibility boundary already (its revisions are judged only against
// each other), so a level set on it concerns its revisions alone and never
// another version's.

// VersionLevel returns the compatibility level in force for the revisions
// of one stream version, and where it is set: Scope "version" (its own),
// "stream", "registry" or "default". A version need not have revisions to
// have a level. Version 0 asks for the stream's, as Level does.
func (r *Registry) VersionLevel(ctx context.Context, stream string, version int) (Setting[schema.Level], error) {
	set, err := r.settings(ctx, stream, version)
	if err != nil {
		return Setting[schema.Level]{}, err
	}
	level, scope := levelOf(set)
	return Setting[schema.Level]{Value: level, Scope: scope}, nil
}

// VersionMode returns the mode in force for the revisions of one stream
// version and where it is set, as VersionLevel.
func (r *Registry) VersionMode(ctx context.Context, stream string, version int) (Setting[Mode], error) {
	set, err := r.settings(ctx, stream, version)
	if err != nil {
		return Setting[Mode]{}, err
	}
	mode, scope := modeOf(set)
	return Setting[Mode]{Value: mode, Scope: scope}, nil
}

// SetVersionLevel sets a stream version's own level, also before its
// first revision; it judges that version's revisions only and wins over
// the stream's level.
func (r *Registry) SetVersionLevel(ctx context.Context, stream string, version int, level schema.Level) error {
	if err := versionScope(stream, version); err != nil {
		return err
	}
	return r.setLevel(ctx, stream, version, level)
}

// ClearVersionLevel removes a stream version's own level, so the stream's
// (else the registry-wide one) applies to it again.
func (r *Registry) ClearVersionLevel(ctx context.Context, stream string, version int) error {
	if err := versionScope(stream, version); err != nil {
		return err
	}
	return r.update(ctx, stream, version, false, func(s *driver.RegistrySettings) { s.Level = "" })
}

// SetVersionMode sets a stream version's own mode: READONLY refuses new
// revisions of that version only, IMPORT lets that version take explicit
// ids and revision numbers. IMPORT on a version with revisions needs
// force (ErrNotEmpty without it), as SetSubjectMode does: importing next
// to revisions the version already has would mix two histories.
func (r *Registry) SetVersionMode(ctx context.Context, stream string, version int, mode Mode, force bool) error {
	if err := versionScope(stream, version); err != nil {
		return err
	}
	if m, err := ParseMode(string(mode)); err == nil && m == ModeImport && !force {
		revs, err := r.Revisions(ctx, stream, version)
		if err != nil {
			return err
		}
		if len(revs) > 0 {
			return fmt.Errorf("%w: stream %q version %d has %d revision(s); IMPORT mode on a version with revisions needs force", ErrNotEmpty, stream, version, len(revs))
		}
	}
	return r.setMode(ctx, stream, version, mode)
}

// ClearVersionMode removes a stream version's own mode.
func (r *Registry) ClearVersionMode(ctx context.Context, stream string, version int) error {
	if err := versionScope(stream, version); err != nil {
		return err
	}
	return r.update(ctx, stream, version, true, func(s *driver.RegistrySettings) { s.Mode = "" })
}

// versionScope refuses what is not a stream version: versions start at 1,
// and the registry-wide scope has none.
func versionScope(stream string, version int) error {
	switch {
	case version < 1:
		return fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, version)
	case stream == RegistryWide:
		return fmt.Errorf("%w: the registry-wide scope has no versions; name a stream", ErrInvalidOption)
	}
	return nil
}
