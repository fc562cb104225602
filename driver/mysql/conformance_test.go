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

func TestConformanceBatchLeases(t *testing.T) { conformance.Run(t, mysqltest.BatchTarget()) }
