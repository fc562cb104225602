package drivertest

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// As returns d as the driver type D its test kit (named kit, for the
// error) works with: the conformance hooks are handed a driver.Driver.
func As[D driver.Driver](kit string, d driver.Driver) (D, error) {
	native, ok := d.(D)
	if !ok {
		return native, fmt.Errorf("%s: a %T, not a %T", kit, d, native)
	}
	return native, nil
}

// SQLKit is the conformance hooks (BeginTx, ExecTx, QueryInt) of a
// database/sql driver's test kit, written once for MySQL's and SQLite's:
// D is the driver's type, DB its database, Adapt and Unwrap its Tx and
// UnwrapTx.
type SQLKit[D driver.Driver] struct {
	Name   string
	DB     func(D) *sql.DB
	Adapt  func(*sql.Tx) driver.Tx
	Unwrap func(driver.Tx) (*sql.Tx, bool)
}

// BeginTx begins a transaction on the driver's database, adapted as the
// driver's, and returns its commit and rollback.
func (k SQLKit[D]) BeginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	native, err := As[D](k.Name, d)
	if err != nil {
		return nil, nil, nil, err
	}
	tx, err := k.DB(native).BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return k.Adapt(tx), tx.Commit, tx.Rollback, nil
}

// ExecTx runs one statement in the adapted transaction tx or, with tx nil,
// on the driver's database.
func (k SQLKit[D]) ExecTx(ctx context.Context, d driver.Driver, tx driver.Tx, query string) error {
	if tx == nil {
		native, err := As[D](k.Name, d)
		if err != nil {
			return err
		}
		_, err = k.DB(native).ExecContext(ctx, query)
		return err
	}
	stx, ok := k.Unwrap(tx)
	if !ok {
		return fmt.Errorf("%s: a %s transaction, not one the driver adapted", k.Name, tx.DriverName())
	}
	_, err := stx.ExecContext(ctx, query)
	return err
}

// QueryInt runs a query returning one integer (NULL is 0) on the driver's
// database.
func (k SQLKit[D]) QueryInt(ctx context.Context, d driver.Driver, query string) (int64, error) {
	native, err := As[D](k.Name, d)
	if err != nil {
		return 0, err
	}
	var n sql.NullInt64
	err = k.DB(native).QueryRowContext(ctx, query).Scan(&n)
	return n.Int64, err
}
