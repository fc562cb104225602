// Package mysql_test runs the conformance suite and the benchmarks on the
// MySQL/MariaDB driver.
package mysql_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

var target = targets.MySQL()

func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }

// TestConformanceSteppedIDs runs the whole suite on a server that steps ids
// by 3, as Galera does.
func TestConformanceSteppedIDs(t *testing.T) { conformance.Run(t, targets.MySQLSteppedIDs()) }
