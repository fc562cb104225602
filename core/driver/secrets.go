package driver

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
)

// Secrets returns the non-empty secrets, each once, longest first: the
// passwords a driver scrubs from error text (Redact, Scrub), in the order
// that replaces a secret containing another whole.
func Secrets(s ...string) []string {
	out := slices.DeleteFunc(slices.Clone(s), func(v string) bool { return v == "" })
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// WidestPassword is the widest reading of the password in a connection
// string's user:password@ (a URL's, after its scheme, or a MySQL DSN):
// from the first ':' to the last '@', as a password holding an unescaped
// '/', '?', '#' or '@' runs. A parser that reads less of it may quote the
// rest in its message, so drivers scrub this reading too.
func WidestPassword(s string) string {
	if at := strings.LastIndex(s, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(s[:at], ":"); ok {
			return pw
		}
	}
	return ""
}

// URLPassword is the password of a URL's user information as net/url
// reads it (percent-decoded), "" when it has none or does not parse.
func URLPassword(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}
