package postgres

// ReadRowsQuery exposes ReadRows' statement and the options of its
// transaction, for plan tests.
var (
	ReadRowsQuery = readRowsQuery
	ReadRowsTx    = readRowsTx
)
