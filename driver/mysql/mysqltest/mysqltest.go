// Package mysqltest describes the MySQL/MariaDB driver to the conformance
// suite and to end-to-end tests: a fresh database per test on the server at
// SQLSTREAMS_MYSQL_DSN.
package mysqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// AdminDSN is the server the tests use: SQLSTREAMS_MYSQL_DSN, or the local
// MariaDB/MySQL with user root and no password.
func AdminDSN() string {
	if dsn := os.Getenv("SQLSTREAMS_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

var admin struct {
	once sync.Once
	db   *sql.DB
	cfg  *gomysql.Config
	err  error
}

func AdminDB(tb testing.TB) (*sql.DB, *gomysql.Config) {
	tb.Helper()
	admin.once.Do(func() {
		admin.cfg, admin.err = gomysql.ParseDSN(AdminDSN())
		if admin.err != nil {
			return
		}
		admin.db, admin.err = sql.Open("mysql", AdminDSN())
		if admin.err != nil {
			return
		}
		admin.db.SetMaxOpenConns(4)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin.err = admin.db.PingContext(ctx)
	})
	if admin.err != nil {
		tb.Fatalf("mysql server at %s is not reachable (set SQLSTREAMS_MYSQL_DSN): %v", AdminDSN(), admin.err)
	}
	return admin.db, admin.cfg
}

// NewDatabase creates a fresh database, dropped at cleanup, and returns a
// DSN that names it.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	db, cfg := AdminDB(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	c := cfg.Clone()
	c.DBName = name
	return c.FormatDSN()
}

// Target is the conformance target for MySQL and MariaDB.
func Target() conformance.Target {
	return conformance.Target{
		Name:         "mysql",
		NewNamespace: NewDatabase,
		Open:         func(ns string) (driver.Driver, error) { return mysql.Open(ns), nil },
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return mysql.Open(ns, mysql.WithLockTimeout(d)), nil
		},
		Unreachable: func() driver.Driver {
			// Port 1 on the loopback refuses at once.
			return mysql.Open("root:secret@tcp(127.0.0.1:1)/sqlstreams?timeout=2s")
		},
		BeginTx: func(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
			tx, err := d.(*mysql.Driver).DB().BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return mysql.Tx(tx), tx.Commit, tx.Rollback, nil
		},
	}
}
