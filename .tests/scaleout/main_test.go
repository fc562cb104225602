package scaleout_test

import (
	"os"
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
)

// TestMain hands the conformance suite's child processes to their roles;
// the parent runs the tests, which start their own servers.
func TestMain(m *testing.M) {
	if os.Getenv("SQLSTREAMS_PROCTEST_ROLE") != "" {
		conformance.Main(m, mysqltest.Target())
	}
	os.Exit(m.Run())
}
