package mysql

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// dsnSecrets guesses the password of a DSN that does not parse, so that it
// can be scrubbed from the parser's messages (which may quote a database
// name or a parameter that a misplaced '/', '?' or '@' cut out of it): the
// password as go-sql-driver would read it (after the first ':' before the
// last '@' before the last '/'), the widest reading (from the first ':' to
// the last '@'), its pieces between the characters the parser splits at,
// and the password of a URL.
func dsnSecrets(dsn string) []string {
	left := dsn
	if i := strings.LastIndex(dsn, "/"); i >= 0 {
		left = dsn[:i]
	}
	wide := driver.WidestPassword(dsn)
	out := []string{driver.WidestPassword(left), wide, driver.URLPassword(dsn)}
	out = append(out, strings.FieldsFunc(wide, func(r rune) bool { return strings.ContainsRune("/?&=@:(),", r) })...)
	return driver.Secrets(out...)
}

var interpolateOff = regexp.MustCompile(`[?&]interpolateParams=(false|0)(&|$)`)

// configure sets what the driver relies on, whatever the DSN said.
func configure(cfg *gomysql.Config, dsn string) error {
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	// Errors reach the caller, and Run logs them; the driver's own log
	// would repeat them on stderr.
	cfg.Logger = &gomysql.NopLogger{}
	cfg.InterpolateParams = !interpolateOff.MatchString(dsn)
	params := map[string]string{}
	for k, v := range cfg.Params {
		if !strings.EqualFold(k, "time_zone") {
			params[k] = v
		}
	}
	params["time_zone"] = "'+00:00'"
	cfg.Params = params
	collation := "utf8mb4_general_ci"
	if strings.HasPrefix(cfg.Collation, "utf8mb4_") {
		collation = cfg.Collation
	}
	return cfg.Apply(gomysql.Charset("utf8mb4", collation))
}

// connector sets the session isolation on every new connection and gives
// failures to connect their sentinel, scrubbed of the password.
type connector struct {
	sqldriver.Connector
	d *Driver
}

func (c *connector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, c.d.connectError(ctx, err)
	}
	ex, ok := conn.(sqldriver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, c.d.connectError(ctx, errors.New("connection cannot execute statements"))
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		conn.Close()
		return nil, c.d.connectError(ctx, err)
	}
	if !c.d.detected.Load() {
		// The first connection learns what the server is, so that a driver
		// used without Migrate (sqlstreams.WithoutMigrate) knows it too.
		if err := c.d.detectOn(ctx, conn); err != nil {
			conn.Close()
			return nil, c.d.connectError(ctx, err)
		}
	}
	if err := c.d.galeraSession(ctx, ex); err != nil {
		conn.Close()
		return nil, c.d.connectError(ctx, err)
	}
	return conn, nil
}

// detectOn reads the server's kind and auto-increment settings on a new
// connection.
func (d *Driver) detectOn(ctx context.Context, conn sqldriver.Conn) error {
	q, ok := conn.(sqldriver.QueryerContext)
	if !ok {
		return errors.New("connection cannot run queries")
	}
	rows, err := q.QueryContext(ctx, "SELECT VERSION(), @@innodb_autoinc_lock_mode, @@auto_increment_increment", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	v := make([]sqldriver.Value, 3)
	if err := rows.Next(v); err != nil {
		return err
	}
	lockMode, err1 := strconv.ParseInt(valueText(v[1]), 10, 64)
	incr, err2 := strconv.ParseInt(valueText(v[2]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("read the server's settings: %w", err)
	}
	mariadb, _ := supported(valueText(v[0])) // Migrate refuses unsupported servers
	rows.Close()
	if err := d.detectCluster(ctx, q, valueText(v[0])); err != nil {
		return err
	}
	d.setServer(mariadb, lockMode, incr)
	return nil
}

// setServer records what the server is: MariaDB or MySQL, and whether one
// INSERT's ids are consecutive (lock mode 0 or 1) and how far apart. A
// Galera node always reads ids back: with wsrep_auto_increment_control ON
// the node changes auto_increment_increment whenever the cluster's size
// changes, so a step read once would go stale.
func (d *Driver) setServer(mariadb bool, lockMode, incr int64) {
	d.mariadb.Store(mariadb)
	if lockMode == 2 || incr < 1 || d.forceReadBack || d.gal.on.Load() {
		d.autoincStep.Store(0)
	} else {
		d.autoincStep.Store(incr)
	}
	d.detected.Store(true)
}
