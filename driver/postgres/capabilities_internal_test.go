package postgres

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

// TestClassifyServer runs the engine detection of Migrate against
// version() strings captured from each engine (drivertest.CheckEngines):
// PostgreSQL is accepted; CockroachDB and YugabyteDB are refused with
// ErrUnsupportedServer naming commit-ordered visibility, as an ErrDatabase
// whose advice says what to use instead.
func TestClassifyServer(t *testing.T) {
	t.Parallel()
	drivertest.CheckEngines(t, engines.Of, engines.Refuse, ErrUnsupportedServer, []drivertest.EngineCase{
		{Version: "PostgreSQL 15.10 (Debian 15.10-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit", Engine: "PostgreSQL"},
		{Version: "PostgreSQL 17.2 on aarch64-unknown-linux-gnu, compiled by gcc (GCC) 12.4.0, 64-bit", Engine: "PostgreSQL"},
		{Version: "CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, built 2023/09/27 01:53:43, go1.19.10)", Engine: "CockroachDB",
			Missing: []string{"commit-ordered visibility", "pg_advisory_xact_lock", "LISTEN/NOTIFY"}, Advice: "use PostgreSQL"},
		{Version: "CockroachDB OSS v2.1.0 (x86_64-unknown-linux-gnu, built 2018/10/30 14:17:38, go1.10.3)", Engine: "CockroachDB",
			Missing: []string{"commit-ordered visibility"}, Advice: "use PostgreSQL"},
		{Version: "PostgreSQL 11.2-YB-2.18.3.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 15.0.3, 64-bit", Engine: "YugabyteDB",
			Missing: []string{"commit-ordered visibility", "advisory locks"}, Advice: "use PostgreSQL"},
		{Version: "PostgreSQL 15.12-YB-2025.2.3.0-b1 on x86_64-pc-linux-gnu, compiled by clang version 17.0.6, 64-bit", Engine: "YugabyteDB",
			Missing: []string{"commit-ordered visibility", "yb_enable_listen_notify"}, Advice: "use PostgreSQL"},
	})
}
