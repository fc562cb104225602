package postgres

import (
	"strings"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// appendFailure is the SQL expression that appends one entry to the failure
// history of delivery_exception row alias (its attempt and holder as they
// were before the statement), with the entry's error and time (RFC 3339
// text) as SQL expressions.
func appendFailure(alias, errExpr, atExpr string) string {
	return `COALESCE(` + alias + `.failures, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', ` + alias + `.attempt, 'error', ` +
		errExpr + `, 'at', ` + atExpr + `, 'holder', COALESCE(` + alias + `.holder, '')))`
}

// storableText is s as a text column can hold it: PostgreSQL text holds
// neither NUL bytes nor invalid UTF-8, so each becomes U+FFFD (an error
// text is otherwise kept as it is).
func storableText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// historyError is an error as a history entry keeps it: at most
// driver.MaxHistoryError bytes, cut at a UTF-8 boundary.
func historyError(s string) string { return driver.CutHistoryError(storableText(s)) }
