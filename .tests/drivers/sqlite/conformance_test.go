// Package sqlite_test runs the conformance suite and the benchmarks on the
// SQLite driver.
package sqlite_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

var target = targets.SQLite()

func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }
