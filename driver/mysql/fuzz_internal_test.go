package mysql

// FuzzOpenDSN is the fuzz target for the DSN the driver parses (issue #25
// §5); core/fuzz_test.go has the command line that fuzzes every target.

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// FuzzOpenDSN opens the driver on user:password@rest DSNs. Open never
// connects and never panics; a DSN it cannot use gives an ErrUnavailable
// that never shows the password, unless the same text shows with another
// password in its place (then it comes from elsewhere in the DSN).
func FuzzOpenDSN(f *testing.F) {
	for _, s := range [][3]string{
		{"root", "secret", "tcp(127.0.0.1:3306)/app"}, {"root", "secret", "tcp(127.0.0.1:3306)/"},
		{"root", "sec/ret", "tcp(h)/db?x=1"}, {"root", "sec@ret", "tcp(h)/db"}, {"u", "pw?x", "tcp(h)/db"},
		{"u", "secret", "tcp(h)/db?timeout=bogus"}, {"u", "secret", "tcp(h)/db?tls=nope"}, {"u", "s(e)c", "tcp(h/db"},
		{"u", "sec%zzret", "tcp(h)/db%zz"}, {"u", "secret", "h:3306/db"}, {"u", "secret", "tcp(h)/db?interpolateParams=false&collation=latin1_swedish_ci"},
		{"", "", ""}, {"u", "secret", "tcp(h)/db?charset=none&parseTime=maybe"}, {"u", "a:b", "unix(/tmp/s)/db?loc=Mars%2FBase"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, user, pass, rest string) {
		err := openErr(user + ":" + pass + "@" + rest)
		if err == nil {
			return
		}
		if !errors.Is(err, driver.ErrUnavailable) {
			t.Fatalf("Open(%q) = %v; want ErrUnavailable", user+":"+pass+"@"+rest, err)
		}
		other := openErr(user + ":Qz7Qz7Qz7@" + rest)
		for _, p := range passwordForms(pass) {
			if shows(err, p) && !shows(other, p) {
				t.Fatalf("Open(%q) shows the password %q: %v", user+":"+pass+"@"+rest, p, err)
			}
		}
	})
}

// openErr is the error a driver opened on dsn reports, closing what Open
// built (it never connects).
func openErr(dsn string) error {
	d := Open(dsn)
	if d.db != nil {
		_ = d.db.Close()
	}
	return d.opened
}

// passwordForms is the password as written and unescaped, where at least
// three bytes long (shorter ones show by chance).
func passwordForms(p string) []string {
	out := []string{p}
	if u, err := url.PathUnescape(p); err == nil {
		out = append(out, u)
	}
	var long []string
	for _, s := range out {
		if len(s) >= 3 {
			long = append(long, s)
		}
	}
	return long
}

// shows reports whether err's text holds s outside the marks driver.Scrub
// leaves ("xxxxx" then " 1" would otherwise show the password "x 1").
func shows(err error, s string) bool {
	if err == nil {
		return false
	}
	// Each piece between scrub marks on its own: a password that spans a
	// mark (its NUL byte where the mark was, say) is not shown.
	for _, piece := range strings.Split(err.Error(), "xxxxx") {
		if strings.Contains(piece, s) {
			return true
		}
	}
	return false
}
