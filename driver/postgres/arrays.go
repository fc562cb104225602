package postgres

import (
	sqldriver "database/sql/driver"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The array parameters of a claim's record, an ack's statements and an
// append's insert go through these types: pgx encodes an []int64, []*string
// or [][]byte by boxing each element into an interface, one or two
// allocations per id, key and payload, and that garbage was a large share of
// a consumer's CPU. Each type hands pgx a pointer into its slice instead,
// which fits an interface without an allocation, and encodes through pgx's
// Int64Valuer, TextValuer and BytesValuer. Where pgx sends a statement
// without its parameters' types (the simple protocol, a pipeline's
// unprepared statement) it cannot pick the binary encoding, and Value gives
// the array's text form.

// int8s is a bigint[] parameter.
type int8s []int64

func (a int8s) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a int8s) Index(i int) any                     { return (*int8Elem)(&a[i]) }
func (a int8s) IndexType() any                      { return (*int8Elem)(nil) }

func (a int8s) Value() (sqldriver.Value, error) {
	if a == nil {
		return nil, nil
	}
	b := make([]byte, 0, 2+len(a)*8)
	b = append(b, '{')
	for i, v := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(append(b, '}')), nil
}

type int8Elem int64

func (e *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

// texts is a text[] parameter whose nil elements are NULL.
type texts []*string

func (a texts) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a texts) IndexType() any                      { return (*textElem)(nil) }

func (a texts) Index(i int) any {
	if a[i] == nil {
		return nil
	}
	return (*textElem)(a[i])
}

func (a texts) Value() (sqldriver.Value, error) {
	return textForm(len(a), a == nil, func(i int) (string, bool) {
		if a[i] == nil {
			return "", false
		}
		return *a[i], true
	}), nil
}

type textElem string

func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// byteas is a bytea[] parameter whose nil elements are NULL.
type byteas [][]byte

func (a byteas) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a byteas) Index(i int) any                     { return (*byteaElem)(&a[i]) }
func (a byteas) IndexType() any                      { return (*byteaElem)(nil) }

func (a byteas) Value() (sqldriver.Value, error) {
	return textForm(len(a), a == nil, func(i int) (string, bool) {
		if a[i] == nil {
			return "", false
		}
		return `\x` + hex.EncodeToString(a[i]), true
	}), nil
}

type byteaElem []byte

func (e *byteaElem) BytesValue() ([]byte, error) { return *e, nil }

// dimensions is a one-dimensional array's shape; nil is NULL.
func dimensions(n int, null bool) []pgtype.ArrayDimension {
	if null {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// textForm is an array's text form, every element quoted; elem returns
// element i and whether it is not NULL. A nil array is NULL.
func textForm(n int, null bool, elem func(i int) (string, bool)) sqldriver.Value {
	if null {
		return nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		s, ok := elem(i)
		if !ok {
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
		for j := range len(s) {
			if s[j] == '"' || s[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// collectIDs reads a result of one bigint column, of about n rows, without
// the allocation per row that pgx.RowTo makes.
func collectIDs(rows pgx.Rows, n int) ([]int64, error) {
	defer rows.Close()
	ids := make([]int64, 0, n)
	var id int64
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
