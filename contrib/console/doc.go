// Package console is a web console for sqlstreams: an http.Handler that an
// application mounts under a path prefix of its own mux, or that
// `sqlstreams console --listen` serves on its own.
//
// It shows what the operator API of package sqlstreams reads: every stream
// with its worst verdict; a stream's versions with the health read, the
// reasons a version cannot be retired and a retirement checklist; a group's
// cursors against the high-water marks, lease holders and unresolved
// deliveries; dead letters with payload, headers, the whole error and the
// failure history; the log, browsed without claiming; the schema registry's
// revisions, readers, effective level and mode, and the diff between two
// revisions with its problem list. Every page is also served as JSON.
//
// The console is read-only unless Options.AllowActions is set; then it
// replays and discards dead letters, resets cursors (after a dry-run plan),
// deletes groups and changes registry settings. It has no authentication of
// its own: mount it behind the application's, or wrap it in BasicAuth for
// the standalone console. State-changing requests are refused from other
// origins and without the form token its pages carry.
package console
