package sqlstreams

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Converter lets a group read an older version through a function that
// turns its values into the group's type (R7). Make one with ConvertFrom.
type Converter struct {
	from    int
	target  reflect.Type
	name    string
	err     error
	convert func(ctx context.Context, payload []byte) (any, error)
}

// ConvertFrom makes a converter from Old's version to New. A group of New
// that lists it in ConsumerOptions.Converters also claims rows at Old's
// version and hands its handler converted values; health counts those rows
// under the group. A payload that does not decode as Old goes dead like any
// undecodable row; an error from fn is a delivery error, retried with
// backoff.
func ConvertFrom[Old, New Versioned](fn func(ctx context.Context, old Old) (New, error)) Converter {
	c := Converter{target: reflect.TypeFor[New](), name: typeName[Old]() + " -> " + typeName[New]()}
	var raw bool
	c.from, raw, c.err = typeVersion[Old]()
	if c.err == nil && raw {
		c.err = fmt.Errorf("%w: converter %s: RawPayload has no version to convert from", ErrInvalidOption, c.name)
	}
	if fn == nil {
		c.err = fmt.Errorf("%w: converter %s: nil function", ErrInvalidOption, c.name)
	}
	decodeOld := decoderFor[Old]()
	c.convert = func(ctx context.Context, payload []byte) (any, error) {
		old, err := decodeOld(payload)
		if err != nil {
			return nil, err
		}
		v, err := fn(ctx, old)
		if err != nil {
			return nil, fmt.Errorf("converter %s: %w", c.name, err)
		}
		return v, nil
	}
	return c
}

// decodeError marks a payload that does not decode: the row goes dead at
// once, since no retry can change its bytes.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// decoderFor returns a decoder for T that first fills the defaults declared
// with the sqlstreams tag (`sqlstreams:"default=<JSON>"`), so that a member
// an older writer did not send reads as its declared default rather than the
// zero value: the registry accepts such additions because of that default.
// A type the reflector refuses has no defaults to fill; Register reports it.
func decoderFor[T any]() func([]byte) (T, error) {
	defaults, _ := schema.Defaults(reflect.TypeFor[T]())
	return func(payload []byte) (T, error) {
		var v T
		if len(defaults) > 0 {
			root := reflect.ValueOf(&v).Elem()
			for _, d := range defaults {
				f, err := root.FieldByIndexErr(d.Index)
				if err != nil {
					continue // behind a nil embedded pointer
				}
				_ = json.Unmarshal(d.JSON, f.Addr().Interface())
			}
		}
		if err := json.Unmarshal(payload, &v); err != nil {
			return v, &decodeError{fmt.Errorf("decode as %T: %w", v, err)}
		}
		return v, nil
	}
}

// decoder builds a consumer's decode function: T's own version decodes
// directly, converter versions through their converters.
func decoder[T Versioned](raw bool, converters map[int]Converter) func(context.Context, driver.Row) (T, error) {
	if raw {
		return func(_ context.Context, r driver.Row) (T, error) {
			return any(RawPayload{Version: r.SchemaVersion, Data: json.RawMessage(r.Payload)}).(T), nil
		}
	}
	decode := decoderFor[T]()
	return func(ctx context.Context, r driver.Row) (T, error) {
		conv, ok := converters[r.SchemaVersion]
		if !ok {
			return decode(r.Payload)
		}
		v, err := conv.convert(ctx, r.Payload)
		if err != nil {
			var zero T
			return zero, err
		}
		return v.(T), nil
	}
}

// checkConverters validates a consumer's converters for T at version.
func checkConverters[T Versioned](convs []Converter, version int, raw bool) (map[int]Converter, []int, error) {
	if len(convs) == 0 {
		return nil, nil, nil
	}
	if raw {
		return nil, nil, fmt.Errorf("%w: a RawPayload group reads every version already; it takes no converters", ErrInvalidOption)
	}
	byVersion := map[int]Converter{}
	var from []int
	for _, c := range convs {
		switch {
		case c.err != nil:
			return nil, nil, c.err
		case c.convert == nil:
			return nil, nil, fmt.Errorf("%w: a zero Converter; make converters with sqlstreams.ConvertFrom", ErrInvalidOption)
		case c.target != reflect.TypeFor[T]():
			return nil, nil, fmt.Errorf("%w: converter %s produces %v, but the group reads %v", ErrInvalidOption, c.name, c.target, reflect.TypeFor[T]())
		case c.from == version:
			return nil, nil, fmt.Errorf("%w: converter %s converts from version %d, the group's own version", ErrInvalidOption, c.name, version)
		}
		if _, dup := byVersion[c.from]; dup {
			return nil, nil, fmt.Errorf("%w: two converters from version %d", ErrInvalidOption, c.from)
		}
		byVersion[c.from] = c
		from = append(from, c.from)
	}
	slices.Sort(from)
	return byVersion, from, nil
}
