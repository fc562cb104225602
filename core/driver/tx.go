package driver

import "fmt"

// AdaptedTx is a caller's transaction of the engine's type T (*sql.Tx,
// pgx.Tx) as the driver named Driver adapted it for ProduceTx and the
// transactional settles (sqlite.Tx, mysql.Tx, postgres.Tx). The drivers
// share the type and tell their transactions apart by the name: two of them
// adapt *sql.Tx, and each must still refuse the other's (ErrForeignTx).
type AdaptedTx[T any] struct {
	Native T
	Driver string
}

// DriverName implements Tx.
func (a AdaptedTx[T]) DriverName() string { return a.Driver }

// Unwrap returns the transaction the driver named name adapted, and false
// for one another driver adapted (or nil): what a driver's UnwrapTx and its
// calls in a caller's transaction check first.
func Unwrap[T any](tx Tx, name string) (T, bool) {
	a, ok := tx.(AdaptedTx[T])
	if !ok || a.Driver != name {
		var none T
		return none, false
	}
	return a.Native, true
}

// ForeignTx is the error of the driver named name given tx, a transaction
// it did not adapt; hint says how to adapt one for it.
func ForeignTx(name string, tx Tx, hint string) error {
	return fmt.Errorf("%s: %w: got a %s transaction; %s", name, ErrForeignTx, tx.DriverName(), hint)
}
