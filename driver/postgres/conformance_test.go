package postgres_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
)

var (
	target       = postgrestest.Target()
	simpleTarget = postgrestest.SimpleProtocolTarget()
	perDelivery  = postgrestest.PerDeliveryTarget()
	newSchema    = postgrestest.NewSchema
	baseURL      = postgrestest.BaseURL
)

// Child processes of multi-process tests open the namespace with target: the
// simple protocol travels in the namespace URL (default_query_exec_mode).
func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }

func TestConformanceSimpleProtocol(t *testing.T) { conformance.Run(t, simpleTarget) }

// TestConformancePerDeliveryLeases runs the whole suite with a lease row per
// claimed delivery (WithPerDeliveryLeases) instead of batch records.
func TestConformancePerDeliveryLeases(t *testing.T) { conformance.Run(t, perDelivery) }
