package dsn_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url, driver, dsn string
	}{
		{"postgres://u:p@h:5432/db?sslmode=disable", dsn.Postgres, "postgres://u:p@h:5432/db?sslmode=disable"},
		{"postgresql://h/db", dsn.Postgres, "postgresql://h/db"},
		{"mysql://root@tcp(127.0.0.1:3306)/test?parseTime=true", dsn.MySQL, "root@tcp(127.0.0.1:3306)/test?parseTime=true"},
		{"mariadb://u:p@tcp(h:3306)/db", dsn.MySQL, "u:p@tcp(h:3306)/db"},
		{"mysql://u:p@h:3307/db?tls=true", dsn.MySQL, "u:p@tcp(h:3307)/db?tls=true"},
		{"mysql://u@h/db", dsn.MySQL, "u@tcp(h:3306)/db"},
		{"mysql://u%40x:p%2Fq@h/d%2Fb%3Fc", dsn.MySQL, "u@x:p/q@tcp(h:3306)/d%2Fb%3Fc"},           // found by FuzzParse
		{"mysql://u:p@h/db?loc=Europe/Paris", dsn.MySQL, "u:p@tcp(h:3306)/db?loc=Europe%2FParis"}, // found by FuzzParse
		{"sqlite:app.db", dsn.SQLite, "app.db"},
		{"sqlite:///var/lib/app.db", dsn.SQLite, "/var/lib/app.db"},
		{"sqlite://rel/app.db", dsn.SQLite, "rel/app.db"},
		{"SQLite:app.db", dsn.SQLite, "app.db"},
		{"file:app.db?mode=ro", dsn.SQLite, "file:app.db?mode=ro"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			got, err := dsn.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if got.Driver != c.driver || got.DSN != c.dsn {
				t.Fatalf("Parse(%q) = %+v, want driver %s dsn %s", c.url, got, c.driver, c.dsn)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "app.db", "redis://h:6379", "postgres:h/db", "mysql:root@tcp(h)/db", "mysql://u:secret@h", "sqlite:", "sqlite://", "file:", "http://u:secret@h/x", "mysql://u%3Ax:secret@h/db", "mysql://]/db"} {
		t.Run(u, func(t *testing.T) {
			_, err := dsn.Parse(u)
			if !errors.Is(err, dsn.ErrInvalidURL) {
				t.Fatalf("Parse(%q) = %v, want ErrInvalidURL", u, err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the message repeats the password: %v", err)
			}
			if !strings.Contains(err.Error(), "postgres://") && !strings.Contains(err.Error(), "mysql://") {
				t.Fatalf("the message does not show the accepted forms: %v", err)
			}
		})
	}
}

// TestOpen connects through each scheme to a real database: the driver the
// URL picks works end to end with sqlstreams.Open.
func TestOpen(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, url string }{
		{dsn.SQLite, "sqlite:" + filepath.Join(t.TempDir(), "a.db")},
		{dsn.SQLite, "sqlite://" + filepath.Join(t.TempDir(), "b.db")},
		{dsn.Postgres, postgrestest.NewSchema(t, nil)},
		{dsn.MySQL, "mysql://" + mysqltest.NewDatabase(t)},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			drv, err := dsn.Open(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if drv.Name() != c.name {
				t.Fatalf("driver %s, want %s", drv.Name(), c.name)
			}
			client, err := sqlstreams.Open(ctx, drv)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if _, err := client.Stream[sqlstreams.RawPayload]("dsn.check").Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
			streams, err := client.Streams(ctx)
			if err != nil || len(streams) != 1 || streams[0].Name != "dsn.check" {
				t.Fatalf("streams %v, %v", streams, err)
			}
		})
	}
}

func TestForName(t *testing.T) {
	t.Parallel()
	for _, name := range dsn.Names() {
		drv, err := dsn.ForName(name)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := drv.Migrations()
		if err != nil || len(ms) == 0 {
			t.Fatalf("%s migrations: %d, %v", name, len(ms), err)
		}
		if drv.Name() != name {
			t.Fatalf("ForName(%s).Name() = %s", name, drv.Name())
		}
		_ = drv.Close()
	}
	if _, err := dsn.ForName("oracle"); !errors.Is(err, dsn.ErrInvalidURL) {
		t.Fatalf("ForName(oracle) = %v", err)
	}
}
