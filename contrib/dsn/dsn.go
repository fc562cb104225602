package dsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// ErrInvalidURL: the URL names no driver this package knows, or cannot be
// turned into that driver's connection string. The message shows the forms
// accepted; it never repeats a password.
var ErrInvalidURL = errors.New("invalid sqlstreams database URL")

// Driver names, as Target.Driver and driver.Driver.Name report them.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
	SQLite   = "sqlite"
)

// Target is what a URL resolves to: the driver and the connection string in
// that driver's own syntax.
type Target struct {
	// Driver is Postgres, MySQL or SQLite.
	Driver string
	// DSN is what the driver's Open takes: the PostgreSQL URL as given, a
	// go-sql-driver DSN, or an SQLite path or URI.
	DSN string
}

const forms = "use postgres://user:pass@host:5432/db, mysql://user:pass@tcp(host:3306)/db, " +
	"mysql://user:pass@host:3306/db, sqlite:path.db, sqlite:///abs/path.db or file:path.db"

// Parse resolves a URL to its driver and connection string without opening
// anything.
func Parse(rawURL string) (Target, error) {
	s := strings.TrimSpace(rawURL)
	if s == "" {
		return Target{}, fmt.Errorf("%w: the URL is empty; %s", ErrInvalidURL, forms)
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Target{}, fmt.Errorf("%w: %q has no scheme; %s", ErrInvalidURL, redact(s), forms)
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if !strings.HasPrefix(rest, "//") {
			return Target{}, fmt.Errorf("%w: a PostgreSQL URL starts with postgres://; %s", ErrInvalidURL, forms)
		}
		return Target{Driver: Postgres, DSN: s}, nil
	case "mysql", "mariadb":
		d, err := mysqlDSN(rest)
		if err != nil {
			return Target{}, err
		}
		return Target{Driver: MySQL, DSN: d}, nil
	case "sqlite", "sqlite3":
		// sqlite:///abs/path.db → /abs/path.db; sqlite://rel.db → rel.db
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return Target{}, fmt.Errorf("%w: %q names no file; %s", ErrInvalidURL, s, forms)
		}
		return Target{Driver: SQLite, DSN: path}, nil
	case "file":
		if rest == "" {
			return Target{}, fmt.Errorf("%w: %q names no file; %s", ErrInvalidURL, s, forms)
		}
		return Target{Driver: SQLite, DSN: s}, nil
	}
	return Target{}, fmt.Errorf("%w: unknown scheme %q; %s", ErrInvalidURL, scheme, forms)
}

// mysqlDSN turns what follows "mysql:" into a go-sql-driver DSN: a DSN
// (user:pass@tcp(host:3306)/db) passes unchanged, a URL (user:pass@host/db)
// is rewritten.
func mysqlDSN(rest string) (string, error) {
	body, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return "", fmt.Errorf("%w: a MySQL URL starts with mysql://; %s", ErrInvalidURL, forms)
	}
	if strings.Contains(body, "@tcp(") || strings.Contains(body, "@unix(") || strings.HasPrefix(body, "tcp(") || strings.HasPrefix(body, "unix(") {
		return body, nil
	}
	u, err := url.Parse("mysql://" + body)
	if err != nil {
		return "", fmt.Errorf("%w: the MySQL URL does not parse; %s", ErrInvalidURL, forms)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if u.Hostname() == "" || db == "" {
		return "", fmt.Errorf("%w: a MySQL URL needs a host and a database, as in mysql://user:pass@host:3306/db", ErrInvalidURL)
	}
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	host := net.JoinHostPort(u.Hostname(), port)
	if h, _, err := net.SplitHostPort(host); err != nil || h != u.Hostname() {
		return "", fmt.Errorf("%w: the MySQL URL's host %q is not a host name or address; %s", ErrInvalidURL, u.Hostname(), forms)
	}
	if strings.Contains(u.User.Username(), ":") {
		return "", fmt.Errorf("%w: the MySQL user name contains ':', which a go-sql-driver DSN cannot carry; use a user name without it, as in mysql://user:pass@host:3306/db", ErrInvalidURL)
	}
	var b strings.Builder
	if u.User != nil {
		b.WriteString(u.User.Username())
		if p, ok := u.User.Password(); ok {
			b.WriteString(":" + p)
		}
		b.WriteString("@")
	}
	// go-sql-driver unescapes the database name (a '/' or '?' in it would
	// otherwise end it); the user and password need no escaping.
	b.WriteString("tcp(" + host + ")/" + url.PathEscape(db))
	if u.RawQuery != "" {
		// go-sql-driver takes the last '/' for the database's; it unescapes
		// parameter values, so loc=Europe/Paris keeps its meaning.
		b.WriteString("?" + strings.ReplaceAll(u.RawQuery, "/", "%2F"))
	}
	return b.String(), nil
}

// Open returns the driver the URL names. Like the drivers' own Open it does
// not connect: connection errors surface from sqlstreams.Open.
func Open(rawURL string) (driver.Driver, error) {
	t, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	return t.Open(), nil
}

// Open returns the target's driver.
func (t Target) Open() driver.Driver {
	switch t.Driver {
	case Postgres:
		return postgres.Open(t.DSN)
	case MySQL:
		return mysql.Open(t.DSN)
	default:
		return sqlite.Open(t.DSN)
	}
}

// Names lists the driver names Parse resolves to, for flags and help text.
func Names() []string { return []string{Postgres, MySQL, SQLite} }

// ForName returns a driver of the given name that is not connected to any
// database, for reading what does not need one (its migrations' SQL). It
// fails with ErrInvalidURL for an unknown name.
func ForName(name string) (driver.Driver, error) {
	switch strings.ToLower(name) {
	case Postgres, "postgresql":
		return postgres.Open("postgres://localhost/unused"), nil
	case MySQL, "mariadb":
		return mysql.Open("unused@tcp(localhost:3306)/unused"), nil
	case SQLite:
		return sqlite.Open(":memory:"), nil
	}
	return nil, fmt.Errorf("%w: unknown driver %q; use postgres, mysql or sqlite", ErrInvalidURL, name)
}

// redact hides the password of a URL-looking string in messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}
