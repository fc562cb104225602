package sqldb

import (
	"database/sql"
	sqldriver "database/sql/driver"
	"io"
	"strconv"
	"sync/atomic"
)

// fakeDB serves one query: its text is a row count n, and it returns the
// rows 1..n of one integer column, counting the rows it was asked for.
type fakeDB struct{ fetched *int }

func (f fakeDB) Open(string) (sqldriver.Conn, error) { return fakeConn(f), nil }

type fakeConn fakeDB

func (c fakeConn) Prepare(query string) (sqldriver.Stmt, error) { return fakeStmt{c, query}, nil }
func (fakeConn) Close() error                                   { return nil }
func (fakeConn) Begin() (sqldriver.Tx, error)                   { return nil, io.EOF }

type fakeStmt struct {
	c     fakeConn
	query string
}

func (fakeStmt) Close() error                                     { return nil }
func (fakeStmt) NumInput() int                                    { return -1 }
func (fakeStmt) Exec([]sqldriver.Value) (sqldriver.Result, error) { return nil, io.EOF }
func (s fakeStmt) Query([]sqldriver.Value) (sqldriver.Rows, error) {
	n, err := strconv.Atoi(s.query)
	return &fakeRows{n: n, fetched: s.c.fetched}, err
}

type fakeRows struct {
	i, n    int
	fetched *int
}

func (*fakeRows) Columns() []string { return []string{"n"} }
func (*fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []sqldriver.Value) error {
	if r.i == r.n {
		return io.EOF
	}
	r.i++
	*r.fetched++
	dest[0] = int64(r.i)
	return nil
}

// fakes numbers the fakeDB registrations: database/sql panics on a name
// registered twice, as a second run of a test (-count) would.
var fakes atomic.Int64

// openFake opens a database of fakeDB and the count of rows fetched from it.
func openFake() (*sql.DB, *int) {
	fetched := new(int)
	name := "sqldbfake" + strconv.FormatInt(fakes.Add(1), 10)
	sql.Register(name, fakeDB{fetched})
	db, _ := sql.Open(name, "")
	return db, fetched
}
