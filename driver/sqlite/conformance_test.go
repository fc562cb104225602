package sqlite_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/sqlite/sqlitetest"
)

var target = sqlitetest.Target()

func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }

// TestConformanceBatchLeases runs the whole suite with batch leases on.
func TestConformanceBatchLeases(t *testing.T) { conformance.Run(t, sqlitetest.BatchTarget()) }
