package dsn

// FuzzParse is the fuzz target for database URLs (issue #25 §5);
// core/fuzz_test.go has the command line that fuzzes every target.

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// FuzzParse checks that Parse refuses only with ErrInvalidURL and never
// repeats a password in its message, and that a MySQL URL it rewrites
// becomes a go-sql-driver DSN with the same user, password, address and
// database.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"postgres://u:p@h:5432/db?sslmode=disable", "postgresql://h/db", "postgres:h/db", "mysql://root@tcp(127.0.0.1:3306)/test",
		"mysql://u:secret@h:3307/db?tls=true", "mysql://u@h/db", "mysql://u:secret@h", "mysql://u:sec%2Fret@h/db", "mysql://u%40x:p@h/db",
		"mysql://u:p@[::1]:3306/db", "mysql://u:p:q@h/db", "mysql:u:p@h/db", "mysql://u:p@h/d%2Fb", "mysql://h:99999/db",
		"mariadb://u:p@unix(/tmp/s)/db", "sqlite:app.db", "sqlite:///var/lib/app.db", "sqlite://", "file:app.db?mode=ro", "file:",
		"", "  ", "nocolon", "ftp://u:secret@h/x", "://u:secret@h", "mysql://u:secret@h/db%zz", "MySQL://U:P@H/DB", "mysql://u%3Ax:p@h/db",
		"mysql://u%40x:p%2Fq@h/d%2Fb%3Fc", "mysql://:/0", "mysql://]/0", "mysql://h/db?loc=Europe/Paris", "mysql://[fe80::1%25en0]/db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		target, err := Parse(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("Parse(%q) = %v; want ErrInvalidURL", raw, err)
			}
			checkNoPassword(t, raw, err)
			return
		}
		if !slices.Contains(Names(), target.Driver) || target.DSN == "" {
			t.Fatalf("Parse(%q) = %+v; want a known driver and a connection string", raw, target)
		}
		if target.Driver == MySQL {
			checkMySQL(t, raw, target.DSN)
		}
	})
}

// checkNoPassword fails when err shows the URL's password, unless the
// message shows the same text with another password in the URL (then the
// text comes from elsewhere in the URL or from the fixed advice).
func checkNoPassword(t *testing.T, raw string, err error) {
	u, perr := url.Parse(strings.TrimSpace(raw))
	if perr != nil || u.User == nil {
		return
	}
	p, ok := u.User.Password()
	if !ok || len(p) < 3 || !strings.Contains(err.Error(), p) || strings.Count(raw, p) > 1 {
		return // a password the URL also holds elsewhere (as the user, say) cannot be told apart
	}
	_, err2 := Parse(strings.ReplaceAll(raw, p, "Qz7Qz7Qz7"))
	if err2 == nil || !strings.Contains(err2.Error(), p) {
		t.Fatalf("Parse(%q) error shows the password %q: %v", raw, p, err)
	}
}

// checkMySQL parses a rewritten URL's DSN with go-sql-driver and compares
// what it reads with what net/url read from the URL.
func checkMySQL(t *testing.T, raw, dsn string) {
	body := strings.TrimPrefix(strings.TrimSpace(raw), strings.SplitN(strings.TrimSpace(raw), ":", 2)[0]+"://")
	if strings.Contains(body, "@tcp(") || strings.Contains(body, "@unix(") || strings.HasPrefix(body, "tcp(") || strings.HasPrefix(body, "unix(") {
		return // a DSN passed through unchanged: the driver's Open reports its errors
	}
	u, err := url.Parse("mysql://" + body)
	if err != nil {
		t.Fatalf("Parse(%q) accepted a URL net/url refuses: %v", raw, err)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		if u.RawQuery != "" {
			return // go-sql-driver refuses some parameters' values; Open says which
		}
		t.Fatalf("Parse(%q) = %q, which go-sql-driver cannot parse: %v", raw, dsn, err)
	}
	pass, _ := u.User.Password()
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	host, gotPort, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		t.Fatalf("Parse(%q) = %q, whose address %q has no host and port: %v", raw, dsn, cfg.Addr, err)
	}
	got := [5]string{cfg.User, cfg.Passwd, host, gotPort, cfg.DBName}
	want := [5]string{u.User.Username(), pass, u.Hostname(), port, strings.TrimPrefix(u.Path, "/")}
	if got != want {
		t.Fatalf("Parse(%q) = %q; go-sql-driver reads user, password, host, port, database %q, the URL says %q", raw, dsn, got, want)
	}
}
