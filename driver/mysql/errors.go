package mysql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// op says what a failed call was doing, which decides what its failure
// means.
type op int

const (
	// opRead: nothing the call sent can have committed (a read, a statement
	// of the driver's own transaction before COMMIT, taking a connection).
	opRead op = iota
	// opWrite: a COMMIT, or a statement that commits on its own, had been
	// sent: without the server's answer its outcome is unknown.
	opWrite
	// opCallerTx: a statement in the caller's transaction.
	opCallerTx
)

// MySQL and MariaDB error numbers the driver handles.
const (
	errDupEntry        = 1062
	errNoSuchTable     = 1146
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
	errTableDefChanged = 1412
	errRecordChanged   = 1020 // MariaDB with innodb_snapshot_isolation
	errLockNowait      = 3572 // MySQL: NOWAIT found the row locked
)

// Server errors that mean the server cannot serve this client now.
var unavailableErrnos = map[uint16]string{
	1040: "the server has too many connections",
	1044: "the server refused access to the database",
	1045: "the server refused the login",
	1049: "the database named in the DSN does not exist",
	1053: "the server is shutting down",
	1077: "the server is shutting down",
	1129: "the server blocked this host after connection errors",
	1130: "the server does not accept connections from this host",
	1203: "the user has too many connections",
	1226: "the user exceeded a resource limit",
	1251: "the server wants an authentication method the client does not offer",
	1698: "the server refused the login",
	1820: "the user's password has expired",
	1862: "the user's password has expired",
	1927: "the server killed the connection",
	3159: "the server requires a secure transport (TLS)",
	4031: "the server closed the idle connection",
}

// rolledBack reports the errors for which the engine rolled the
// statement or transaction back, so that it may simply run again.
func rolledBack(n uint16) bool {
	return n == errDeadlock || n == errRecordChanged || n == errTableDefChanged
}

// lockWaitEnded reports a locking read whose wait for another
// transaction's lock ran out.
func lockWaitEnded(err error) bool {
	n := mysqlErrno(err)
	return n == errLockWaitTimeout || n == errLockNowait
}

func mysqlErrno(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// isConnError reports a connection that failed under a call.
func isConnError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, gomysql.ErrMalformPkt) ||
		errors.Is(err, gomysql.ErrPktSync) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

func isUnique(err error) bool { return mysqlErrno(err) == errDupEntry }

// wrap gives an engine error the sentinel that says what it means, with the
// DSN's password scrubbed from its text. Errors that already carry one pass
// unchanged, and so does the caller's own cancellation of a call that has
// not written anything.
func (d *Driver) wrap(ctx context.Context, err error, o op) error {
	if err == nil || driver.Classified(err) {
		return err
	}
	if d.closed.Load() {
		// database/sql says "database is closed" with an error of its own
		// that cannot be matched; whatever failed, the client was closed.
		return fmt.Errorf("mysql %s: %w", d.where, driver.ErrClosed)
	}
	e := &driver.Error{Kind: driver.ErrDatabase, Err: driver.Redact(err, d.secrets...)}
	if errors.Is(err, errOutOfOrder) || d.galeraIDTaken(err) {
		e.Kind, e.Advice = driver.ErrConflict, "another Galera node appended to the partition meanwhile; run the transaction again"
		return e
	}
	if n := mysqlErrno(err); n != 0 {
		// The server answered: the statement, or the transaction, failed.
		switch {
		case n == errDuringCommit && o == opWrite && d.gal.on.Load():
			e.Kind = driver.ErrOutcomeUnknown
			e.Advice = "the Galera node failed while committing (it may have left the cluster); the other nodes may have applied the change: check before retrying, or make consumers idempotent"
		case n == errDeadlock:
			e.Kind = driver.ErrConflict
			e.Advice = "the database chose this transaction as the victim of a deadlock and rolled it back; retry it, and take locks in one order"
			if o == opCallerTx {
				e.Advice = "the database chose this transaction as the victim of a deadlock and rolled it back; run the whole transaction again " +
					"(produce to several partitions with one ProduceBatch, which locks them in one order)"
			}
		case n == errLockWaitTimeout || n == errLockNowait || n == errRecordChanged || n == errTableDefChanged:
			e.Kind = driver.ErrConflict
		default:
			if why, ok := unavailableErrnos[n]; ok {
				e.Kind, e.Advice = driver.ErrUnavailable, why+"; nothing was written"
			}
		}
		return e
	}
	ctxErr := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	switch {
	case o == opWrite && errors.Is(err, sqldriver.ErrBadConn):
		// go-sql-driver says ErrBadConn only when nothing was sent.
		e.Kind, e.Advice = driver.ErrUnavailable, "the connection to the database was lost before the statement was sent; nothing was written"
	case o != opWrite && errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return err // the caller gave up; nothing was written
	case ctxErr || isConnError(err):
		e = driver.Unanswered(e.Err, o == opWrite, ctxErr)
		switch {
		case o == opCallerTx && ctxErr:
			e.Advice = "the database did not answer before the context's deadline, and the connection of the caller's transaction was closed, which rolls it back; begin it again"
		case o == opCallerTx:
			e.Advice = "the connection of the caller's transaction was lost, which rolls it back; begin it again"
		}
	}
	return e
}

// connectError gives a failure to connect its sentinel: every one means the
// database cannot be used now, and nothing was written.
func (d *Driver) connectError(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return err
	}
	advice := "check that the server at " + d.addr() + " is running and reachable; nothing was written, so retrying once it is back is safe"
	var me *gomysql.MySQLError
	var ce *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var re tls.RecordHeaderError
	switch {
	case errors.As(err, &me):
		if why, ok := unavailableErrnos[me.Number]; ok {
			advice = why + "; check the user, password and database in the DSN and the user's grants"
		}
	case errors.As(err, &ce), errors.As(err, &ue), errors.As(err, &he), errors.As(err, &re), errors.Is(err, gomysql.ErrNoTLS):
		advice = "the TLS handshake failed; check the tls parameter of the DSN and the server's certificate"
	case errors.Is(err, context.DeadlineExceeded):
		advice = "the server at " + d.addr() + " did not answer before the context's deadline; check that it is running and reachable"
	}
	return &driver.Error{Kind: driver.ErrUnavailable, Advice: advice, Err: driver.Redact(fmt.Errorf("mysql %s: connect: %w", d.where, err), d.secrets...)}
}

func (d *Driver) addr() string {
	if d.where == "" {
		return "the DSN's address"
	}
	return d.where
}
