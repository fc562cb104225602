package postgres

import "testing"

// TestNumbered numbers the shared statements' placeholders for pgx and
// double-quotes their backquoted identifiers, outside string literals.
func TestNumbered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT level FROM registry_setting WHERE stream_id = ? AND version = ? FOR UPDATE`, `SELECT level FROM registry_setting WHERE stream_id = $1 AND version = $2 FOR UPDATE`},
		{`x IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `x IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`},
		{`?`, `$1`},
		{"SELECT `partition` FROM t WHERE a = ? ORDER BY `partition`", `SELECT "partition" FROM t WHERE a = $1 ORDER BY "partition"`},
		{"SELECT '?', 'it''s `x`?', ? FROM t", "SELECT '?', 'it''s `x`?', $1 FROM t"},
		{"state = 'dead' AND msg_id > ?", "state = 'dead' AND msg_id > $1"},
		{"SELECT 'open", "SELECT 'open"},
	} {
		if got := numbered(tc.in); got != tc.want {
			t.Errorf("numbered(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNumberedQuotes double-quotes the shared statements' backquoted
// identifiers, and nothing inside a string literal.
func TestNumberedQuotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{"SELECT m.`partition` FROM t m WHERE c.`partition` = m.`partition`", `SELECT m."partition" FROM t m WHERE c."partition" = m."partition"`},
		{"SELECT '`a`', `b` FROM t", "SELECT '`a`', \"b\" FROM t"},
		{"SELECT 'it''s `x`', `y`", "SELECT 'it''s `x`', \"y\""},
	} {
		if got := numbered(tc.in); got != tc.want {
			t.Errorf("numbered(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
