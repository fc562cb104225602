package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestClassifyServer runs the engine detection of Migrate against
// version() strings captured from each engine: PostgreSQL is accepted;
// CockroachDB and YugabyteDB are refused with ErrUnsupportedServer naming
// commit-ordered visibility, as an ErrDatabase whose advice says what to
// use instead.
func TestClassifyServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		engine  string
		missing []string
	}{
		{version: "PostgreSQL 15.10 (Debian 15.10-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit", engine: "PostgreSQL"},
		{version: "PostgreSQL 17.2 on aarch64-unknown-linux-gnu, compiled by gcc (GCC) 12.4.0, 64-bit", engine: "PostgreSQL"},
		{version: "CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, built 2023/09/27 01:53:43, go1.19.10)", engine: "CockroachDB",
			missing: []string{"commit-ordered visibility", "pg_advisory_xact_lock", "LISTEN/NOTIFY"}},
		{version: "CockroachDB OSS v2.1.0 (x86_64-unknown-linux-gnu, built 2018/10/30 14:17:38, go1.10.3)", engine: "CockroachDB",
			missing: []string{"commit-ordered visibility"}},
		{version: "PostgreSQL 11.2-YB-2.18.3.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 15.0.3, 64-bit", engine: "YugabyteDB",
			missing: []string{"commit-ordered visibility", "advisory locks"}},
		{version: "PostgreSQL 15.12-YB-2025.2.3.0-b1 on x86_64-pc-linux-gnu, compiled by clang version 17.0.6, 64-bit", engine: "YugabyteDB",
			missing: []string{"commit-ordered visibility", "yb_enable_listen_notify"}},
	}
	for _, tt := range tests {
		t.Run(tt.engine+" "+tt.version[:20], func(t *testing.T) {
			t.Parallel()
			e := classifyServer(tt.version)
			if e.name != tt.engine {
				t.Errorf("engine %q; want %q", e.name, tt.engine)
			}
			err := refuseEngine(e)
			if tt.missing == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *driver.Error
			if !errors.Is(err, ErrUnsupportedServer) || !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) {
				t.Fatalf("%v; want an ErrDatabase with ErrUnsupportedServer", err)
			}
			for _, m := range tt.missing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
			if !strings.Contains(de.Advice, "use PostgreSQL") {
				t.Errorf("advice %q does not say what to use", de.Advice)
			}
		})
	}
}
