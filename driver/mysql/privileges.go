package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// MySQL and MariaDB errors of the privilege probe.
const (
	errDBAccessDenied    = 1044
	errTableExists       = 1050
	errBadTable          = 1051
	errTableAccessDenied = 1142
)

// CheckPrivileges implements driver.Driver, without creating anything.
// When information_schema shows the user's own CREATE and DROP privileges,
// global or on a row naming exactly this database (which takes precedence
// over any pattern), that is enough. Otherwise (privileges through a role
// or a pattern such as app\_%, which information_schema does not resolve,
// or none) the server itself decides: CREATE TABLE p LIKE q and DROP TABLE
// q, for names p and q that do not exist, fail on the missing privilege
// when the user lacks it (the server checks privileges first) and otherwise
// on the missing table. The probe is left for that case because failing
// DDL is not free everywhere (Galera orders DDL across the cluster, and
// monitoring counts the errors).
func (d *Driver) CheckPrivileges(ctx context.Context, _ driver.CheckPrivilegesParams) error {
	if err := d.check(); err != nil {
		return err
	}
	err := d.checkPrivileges(ctx)
	if err == nil || driver.Classified(err) {
		return err
	}
	return d.wrap(ctx, fmt.Errorf("mysql %s: check privileges: %w", d.where, err), opRead)
}

func (d *Driver) checkPrivileges(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var user, db sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT CURRENT_USER(), DATABASE()`).Scan(&user, &db); err != nil {
		return err
	}
	grantee := user.String
	if i := strings.LastIndex(grantee, "@"); i >= 0 {
		grantee = "'" + grantee[:i] + "'@'" + grantee[i+1:] + "'"
	}
	held := map[string]bool{}
	if err := sqldb.EachRow(ctx, conn, `SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ? AND PRIVILEGE_TYPE IN ('CREATE', 'DROP')
		UNION SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND CAST(TABLE_SCHEMA AS BINARY) IN (?, ?)
			AND PRIVILEGE_TYPE IN ('CREATE', 'DROP')`,
		[]any{grantee, grantee, db.String, likeEscape(db.String)}, func(r *sql.Rows) error {
			var p string
			err := r.Scan(&p)
			held[strings.ToUpper(p)] = true
			return err
		}); err != nil {
		return err
	}
	if held["CREATE"] && held["DROP"] {
		return nil
	}
	d.privilegeProbes.Add(1)
	var b [8]byte
	_, _ = rand.Read(b[:])
	probe := "sqlstreams_privilege_probe_" + hex.EncodeToString(b[:])
	var missing []string
	var refusals []error
	try := func(stmt, privilege string, fine ...uint16) error {
		_, err := conn.ExecContext(ctx, stmt)
		var me *gomysql.MySQLError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &me):
			return err
		case slices.Contains(fine, me.Number):
			return nil
		case me.Number == errTableAccessDenied || me.Number == errDBAccessDenied:
			if strings.HasPrefix(me.Message, "SELECT") {
				privilege = "SELECT"
			}
			missing = append(missing, privilege)
			refusals = append(refusals, err)
			return nil
		default:
			return &driver.Error{Kind: driver.ErrDatabase, Err: driver.Redact(fmt.Errorf("mysql %s: check privileges: %s: %w", d.where, stmt, err), d.secrets...),
				Advice: "streams create and drop a table each at run time, and the server refused to check that this user may (a read-only server?)"}
		}
	}
	if err := try("CREATE TABLE "+probe+" LIKE "+probe+"_missing", "CREATE", errNoSuchTable, errTableExists); err != nil {
		return err
	}
	if err := try("DROP TABLE "+probe+"_missing", "DROP", errBadTable); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	return &driver.Error{Kind: driver.ErrDatabase,
		Err: driver.Redact(fmt.Errorf("mysql %s: user %s lacks the %s privilege on database %s, which sqlstreams needs to create and drop a table per stream at run time: %w",
			d.where, user.String, strings.Join(missing, " and "), db.String, errors.Join(refusals...)), d.secrets...),
		Advice: fmt.Sprintf("as an administrator, run GRANT %s ON %s.* TO %s", strings.Join(missing, ", "), quoteName(db.String), grantee)}
}

// likeEscape is a database name as GRANT ... ON `app\_1`.* stores it: the
// pattern characters escaped, so that the grant names exactly that name.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`).Replace(s)
}
