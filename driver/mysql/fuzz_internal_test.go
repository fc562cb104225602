package mysql

// FuzzOpenDSN is the fuzz target for the DSN the driver parses (issue #25
// §5); core/fuzz_test.go has the command line that fuzzes every target.

import (
	"errors"
	"net/url"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
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
		for _, p := range drivertest.PasswordForms(pass, url.PathUnescape) {
			if drivertest.Shows(err, p) && !drivertest.Shows(other, p) {
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
