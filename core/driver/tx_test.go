package driver_test

import (
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

type nativeA struct{ n int }

type otherTx struct{}

func (otherTx) DriverName() string { return "other" }

// TestUnwrap: a driver gets back only what it adapted itself, even when
// another driver adapts the same native type, and a foreign transaction's
// error names it and matches ErrForeignTx.
func TestUnwrap(t *testing.T) {
	t.Parallel()
	mine := &nativeA{n: 1}
	tests := []struct {
		name string
		tx   driver.Tx
		want *nativeA
		ok   bool
	}{
		{"adapted by this driver", driver.AdaptedTx[*nativeA]{Native: mine, Driver: "a"}, mine, true},
		{"same native type, another driver", driver.AdaptedTx[*nativeA]{Native: mine, Driver: "b"}, nil, false},
		{"another native type", driver.AdaptedTx[nativeA]{Native: *mine, Driver: "a"}, nil, false},
		{"another adapter", otherTx{}, nil, false},
		{"nil", nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := driver.Unwrap[*nativeA](tc.tx, "a")
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Unwrap = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
			if tc.tx != nil && tc.tx.DriverName() == "" {
				t.Fatal("DriverName is empty")
			}
		})
	}
	err := driver.ForeignTx("a", otherTx{}, "wrap it with a.Tx")
	if !errors.Is(err, driver.ErrForeignTx) || err.Error() != "a: transaction belongs to another driver: got a other transaction; wrap it with a.Tx" {
		t.Fatalf("ForeignTx = %v", err)
	}
}
