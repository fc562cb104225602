// Package dsn opens the sqlstreams driver a URL names, so that one setting
// (an environment variable, a flag, a configuration key) picks the database
// per deployment: SQLite in development, PostgreSQL or MariaDB in
// production, with no driver-specific code in the application.
//
// The scheme picks the driver:
//
//	postgres://user:pass@host:5432/db?sslmode=disable   PostgreSQL (also postgresql://), passed to pgx unchanged
//	mysql://user:pass@tcp(host:3306)/db?parseTime=true  MySQL or MariaDB (also mariadb://): the rest is a go-sql-driver DSN
//	mysql://user:pass@host:3306/db                      the same, written as a URL
//	sqlite:app.db, sqlite:///var/lib/app.db             SQLite: a relative or an absolute path
//	file:app.db?mode=ro                                 SQLite, the whole string as an SQLite URI
//
// The core module imports no driver; this package imports all three, which
// is the price of choosing at run time. An application that knows its
// database at compile time imports that driver alone.
package dsn
