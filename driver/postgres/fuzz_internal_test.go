package postgres

// FuzzOpenURL is the fuzz target for the connection strings the driver
// parses (issue #25 §5); core/fuzz_test.go has the command line that
// fuzzes every target.

import (
	"errors"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

// pgForms builds a connection string around a password: a URL, a
// key=value string, and a key=value string with the password quoted.
var pgForms = []func(user, pass, rest string) string{
	func(user, pass, rest string) string { return "postgres://" + user + ":" + pass + "@" + rest },
	func(user, pass, rest string) string { return "user=" + user + " password=" + pass + " " + rest },
	func(user, pass, rest string) string { return "user=" + user + " password='" + pass + "' " + rest },
}

// FuzzOpenURL checks the connection strings pgx refuses: Open reports an
// ErrUnavailable that never shows the password, unless the same text shows
// with another password in its place (then it comes from elsewhere in the
// string). Strings pgx accepts are left alone: Open would start a pool, and
// a fuzzed pool_min_conns would have it dial fuzzed hosts.
func FuzzOpenURL(f *testing.F) {
	for _, s := range []struct {
		form             uint8
		user, pass, rest string
	}{
		{0, "u", "secret", "h:5432/db?sslmode=disable"}, {0, "u", "secret", "h:99999/db"}, {0, "u", "sec%zzret", "h/db"},
		{0, "u", "sec/ret", "h/db"}, {0, "u", "sec@ret", "h/db"}, {0, "u", "secret", "h/db?sslmode=bogus"},
		{0, "u", "secret", "h/db?connect_timeout=x"}, {0, "u", "s%40cret", "[::1/db"}, {0, "u", "secret", "h/db?pool_max_conns=0"},
		{1, "u", "secret", "host=h dbname=db"}, {1, "u", "secret", "host=h port=x"}, {1, "u", "sec ret", "sslmode=bogus"},
		{2, "u", "sec'ret", "host=h"}, {2, "u", "sec\\'ret", "port=-1"}, {2, "u", "secret", "target_session_attrs=odd"},
	} {
		f.Add(s.form, s.user, s.pass, s.rest)
	}
	f.Fuzz(func(t *testing.T, form uint8, user, pass, rest string) {
		build := pgForms[int(form)%len(pgForms)]
		conn := build(user, pass, rest)
		err := openErr(conn)
		if err == nil {
			return
		}
		if !errors.Is(err, driver.ErrUnavailable) {
			t.Fatalf("Open(%q) = %v; want ErrUnavailable", conn, err)
		}
		// The same string with another password, and with the password's
		// letters and digits changed but its shape kept (so it fails to
		// parse the same way): text both show comes from elsewhere.
		other := openErr(build(user, "Qz7Qz7Qz7", rest))
		lookalike := openErr(build(user, disguise(pass), rest))
		for _, p := range drivertest.PasswordForms(pass, url.PathUnescape, url.QueryUnescape) {
			if drivertest.Shows(err, p) && !drivertest.Shows(other, p) && !drivertest.Shows(lookalike, p) {
				t.Fatalf("Open(%q) shows the password %q: %v", conn, p, err)
			}
		}
	})
}

// disguise changes each letter and digit of s to another of its class
// (hex letters stay hex letters), keeping every other byte, so a password
// that breaks the string's syntax breaks it the same way.
func disguise(s string) string {
	rotate := func(c, lo, hi byte) byte {
		if c == hi {
			return lo
		}
		return c + 1
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'f':
			b[i] = rotate(c, 'a', 'f')
		case c >= 'g' && c <= 'z':
			b[i] = rotate(c, 'g', 'z')
		case c >= 'A' && c <= 'F':
			b[i] = rotate(c, 'A', 'F')
		case c >= 'G' && c <= 'Z':
			b[i] = rotate(c, 'G', 'Z')
		case c >= '0' && c <= '9':
			b[i] = rotate(c, '0', '9')
		}
	}
	return string(b)
}

// openErr is the error a driver opened on conn reports, or nil for a
// string pgx parses, on which it does not open the driver.
func openErr(conn string) error {
	if _, err := pgxpool.ParseConfig(conn); err == nil {
		return nil
	}
	return Open(conn).opened
}
