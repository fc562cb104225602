package mysql_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
)

var (
	target      = mysqltest.Target()
	newDatabase = mysqltest.NewDatabase
	adminDB     = mysqltest.AdminDB
)

func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }

// TestConformancePerDeliveryLeases runs the whole suite with a lease row per
// claimed delivery (WithPerDeliveryLeases) instead of batch records.
func TestConformancePerDeliveryLeases(t *testing.T) {
	conformance.Run(t, mysqltest.PerDeliveryTarget())
}
