package mysql

import "io/fs"

// Hooks for the tests of package mysql_test.

// ForceReadBack makes Append read new ids back from the table, as it does
// when innodb_autoinc_lock_mode is 2. Call it before Migrate.
func ForceReadBack(d *Driver) { d.forceReadBack = true }

// LogDDL is the CREATE TABLE statement of a stream log named table.
func LogDDL(table string) string { return logDDL(table) }

// TimeString formats t as the driver stores it.
var TimeString = ts

// MigrationCount is the number of embedded migrations.
func MigrationCount() int {
	files, _ := fs.Glob(migrations, "migrations/*.sql")
	return len(files)
}
