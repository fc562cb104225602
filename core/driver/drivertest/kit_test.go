package drivertest_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

type kitDriver struct{ driver.Driver }

type otherDriver struct{ driver.Driver }

// TestAs: a kit gets its own driver type back, and another driver's is an
// error that names both types.
func TestAs(t *testing.T) {
	t.Parallel()
	mine := &kitDriver{}
	if got, err := drivertest.As[*kitDriver]("kittest", mine); err != nil || got != mine {
		t.Fatalf("As(own driver) = %v, %v", got, err)
	}
	_, err := drivertest.As[*kitDriver]("kittest", &otherDriver{})
	if err == nil || err.Error() != "kittest: a *drivertest_test.otherDriver, not a *drivertest_test.kitDriver" {
		t.Fatalf("As(another driver) = %v", err)
	}
}
