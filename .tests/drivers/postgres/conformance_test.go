// Package postgres_test runs the conformance suite and the benchmarks on the
// PostgreSQL driver.
package postgres_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

var (
	target    = targets.Postgres()
	newSchema = postgrestest.NewSchema
)

// Child processes of multi-process tests open the namespace with target: the
// simple protocol travels in the namespace URL (default_query_exec_mode).
func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }

func TestConformanceSimpleProtocol(t *testing.T) {
	conformance.Run(t, targets.PostgresSimpleProtocol())
}
