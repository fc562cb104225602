package mysql

import (
	"context"
)

// Hooks for the tests of package mysql_test.

// ForceReadBack makes Append read new ids back from the table, as it does
// when innodb_autoinc_lock_mode is 2. Call it before Migrate.
func ForceReadBack(d *Driver) { d.forceReadBack = true }

// LogDDL is the CREATE TABLE statement of a stream log named table.
func LogDDL(table string) string { return logDDL(table) }

// TimeString formats t as the driver stores it.
var TimeString = ts

// MigrationCount is the number of embedded migrations (down files are part
// of theirs).
func MigrationCount() int {
	ms, _ := (*Driver)(nil).Migrations()
	return len(ms)
}

// ForceNoReturning makes Ack settle several deliveries as on MySQL 8, in a
// transaction that locks them first, instead of DELETE ... RETURNING.
func ForceNoReturning(d *Driver) { d.forceNoReturning = true }

// MigrateTo applies the migrations up to version last only, as an older
// release of the driver did.
func MigrateTo(ctx context.Context, d *Driver, last int) error { return d.migrateTo(ctx, last) }

// IsMariaDB reports what Migrate found.
func IsMariaDB(d *Driver) bool { return d.mariadb.Load() }

// PrivilegeProbes counts the CheckPrivileges calls that had to ask the
// server with DDL, information_schema not showing the privileges.
func PrivilegeProbes(d *Driver) int64 { return d.privilegeProbes.Load() }
