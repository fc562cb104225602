package sqlstreamscli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// goldenCases run against the seeded database. The output is compared with
// testdata/golden/<driver>/<name>.golden after normalize.
var goldenCases = []struct {
	name string
	args []string
}{
	{"streams-list", []string{"streams", "list"}},
	{"streams-list-json", []string{"-o", "json", "streams", "list"}},
	{"streams-describe", []string{"streams", "describe", "orders"}},
	{"health", []string{"health", "orders"}},
	{"health-json", []string{"health", "orders", "-o", "json"}},
	{"health-retirable-v1", []string{"health", "orders", "--retirable", "v1"}},
	{"health-retirable-v2-json", []string{"health", "orders", "--retirable", "2", "-o", "json"}},
	{"health-retirable-never-had", []string{"health", "orders", "--retirable", "v7"}},
	{"health-retirable-never-had-json", []string{"health", "orders", "--retirable", "7", "-o", "json"}},
	{"groups-list", []string{"groups", "list", "orders"}},
	{"groups-list-json", []string{"groups", "list", "orders", "-o", "json"}},
	{"groups-list-all", []string{"groups", "list"}},
	{"groups-list-all-json", []string{"groups", "list", "-o", "json"}},
	{"groups-list-missing-stream", []string{"groups", "list", "nope"}},
	{"groups-describe", []string{"groups", "describe", "orders", "billing"}},
	{"groups-describe-json", []string{"groups", "describe", "orders", "billing", "-o", "json"}},
	{"groups-reset-dry-run", []string{"groups", "reset", "orders", "audit", "--to-id", "2"}},
	{"groups-reset-json", []string{"groups", "reset", "orders", "billing", "--to-earliest", "-o", "json"}},
	{"groups-delete-refused", []string{"groups", "delete", "orders", "billing", "--yes"}},
	{"groups-pause", []string{"groups", "pause", "orders", "audit"}},
	{"groups-describe-paused", []string{"groups", "describe", "orders", "audit"}},
	{"groups-list-paused-json", []string{"groups", "list", "orders", "-o", "json"}},
	{"groups-resume", []string{"groups", "resume", "orders", "audit"}},
	{"groups-pause-missing", []string{"groups", "pause", "orders", "nope"}},
	{"dead-list", []string{"dead", "list", "orders", "billing"}},
	{"dead-list-json", []string{"dead", "list", "orders", "billing", "-o", "json"}},
	{"dead-list-jsonl", []string{"dead", "list", "orders", "billing", "-o", "jsonl"}},
	{"dead-show", []string{"dead", "show", "orders", "billing", "4"}},
	{"dead-show-json", []string{"dead", "show", "orders", "billing", "4", "-o", "json"}},
	{"dead-show-missing", []string{"dead", "show", "orders", "billing", "1"}},
	{"tail", []string{"tail", "orders"}},
	{"tail-last-json", []string{"tail", "orders", "--last", "2", "-o", "json"}},
	{"tail-key-version", []string{"tail", "orders", "--key", "acct-1", "--version", "v1", "-o", "jsonl"}},
	{"tail-partition-limit", []string{"tail", "orders", "--partition", "1", "--limit", "1"}},
	{"schema-list", []string{"schema", "list", "orders"}},
	{"schema-list-json", []string{"schema", "list", "orders", "-o", "json"}},
	{"schema-show", []string{"schema", "show", "orders", "v1"}},
	{"schema-show-json", []string{"schema", "show", "orders", "2", "--revision", "1", "-o", "json"}},
	{"schema-check-incompatible", []string{"schema", "check", "orders", "1", "testdata/v1-incompatible.json"}},
	{"schema-check-incompatible-json", []string{"schema", "check", "orders", "1", "testdata/v1-incompatible.json", "-o", "json"}},
	{"schema-check-compatible", []string{"schema", "check", "orders", "v1", "testdata/v1-compatible.json"}},
	{"schema-check-new-stream-json", []string{"schema", "check", "invoices", "1", "testdata/v1-incompatible.json", "-o", "json"}},
	{"schema-show-missing-revision", []string{"schema", "show", "orders", "1", "--revision", "9"}},
	{"schema-show-missing-version", []string{"schema", "show", "orders", "7"}},
	{"schema-level-get", []string{"schema", "level", "get", "orders"}},
	{"schema-level-get-version", []string{"schema", "level", "get", "orders", "--version", "1"}},
	{"schema-mode-get-version-json", []string{"schema", "mode", "get", "orders", "--version", "2", "-o", "json"}},
	{"schema-mode-get-global-json", []string{"schema", "mode", "get", "--global", "-o", "json"}},
	{"migrate-list", []string{"migrate", "list"}},
	{"migrate-validate", []string{"migrate", "validate"}},
	{"maintain", []string{"maintain"}},
	{"maintain-json", []string{"maintain", "-o", "json"}},
	{"health-missing-stream", []string{"health", "nope"}},
	{"destroy-without-yes", []string{"streams", "destroy", "orders"}},
	{"reset-two-targets", []string{"groups", "reset", "orders", "audit", "--to-earliest", "--to-latest"}},
	{"streams-create-if-not-exists", []string{"streams", "create", "accounts", "--if-not-exists", "--partitions", "3"}},
	{"streams-create-exists", []string{"streams", "create", "accounts"}},
	{"mistyped-command", []string{"grups", "list"}},
	{"mistyped-subcommand", []string{"groups", "lsit"}},
	{"unknown-subcommand", []string{"groups", "frobnicate"}},
	{"mistyped-stream", []string{"health", "ordres"}},
	{"mistyped-group", []string{"groups", "describe", "orders", "biling"}},
	{"mistyped-group-dead", []string{"dead", "list", "orders", "bill"}},
	{"complete-streams", []string{"__complete", "groups", "describe", ""}},
	{"complete-groups", []string{"__complete", "dead", "list", "orders", "a"}},
	{"complete-new-stream", []string{"__complete", "streams", "create", ""}},
	{"groups-create-latest", []string{"groups", "create", "orders", "fresh", "--version", "v1", "--at", "latest"}},
	{"groups-create-at-id-json", []string{"groups", "create", "orders", "from-4", "--version", "1", "--at", "4", "-o", "json"}},
	{"groups-create-exists", []string{"groups", "create", "orders", "billing", "--version", "1"}},
	{"groups-create-if-not-exists", []string{"groups", "create", "orders", "billing", "--version", "1", "--if-not-exists"}},
	{"groups-create-other-version", []string{"groups", "create", "orders", "billing", "--version", "2", "--if-not-exists"}},
	{"groups-create-bad-at", []string{"groups", "create", "orders", "x", "--version", "1", "--at", "yesterday"}},
	{"groups-create-no-version", []string{"groups", "create", "orders", "x"}},
	{"streams-alter-plan", []string{"streams", "alter", "orders", "--partitions", "3", "--max-age", "24h"}},
	{"streams-alter-plan-json", []string{"streams", "alter", "accounts", "--compacted=false", "--hard", "-o", "json"}},
	{"streams-alter-fewer", []string{"streams", "alter", "orders", "--partitions", "1"}},
	{"streams-alter-nothing", []string{"streams", "alter", "orders"}},
	{"streams-alter-same", []string{"streams", "alter", "orders", "--partitions", "2"}},
	{"streams-alter-execute", []string{"streams", "alter", "accounts", "--max-rows", "500", "--execute"}},
	{"streams-list-after-alter", []string{"streams", "list"}},
	{"destroy-refused", []string{"streams", "destroy", "orders", "--yes"}},
	// Last: they destroy what the cases above read.
	{"destroy-forced", []string{"streams", "destroy", "orders", "--yes", "--force"}},
	{"destroy-json", []string{"streams", "destroy", "accounts", "--yes", "-o", "json"}},
}

// TestGolden runs every read command on the same seeded data on SQLite, a
// PostgreSQL schema and a MariaDB database and compares the whole output
// (stdout, stderr, exit code) with the goldens.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.newURL(t)
			seed(t, url)
			for _, c := range goldenCases {
				r := cli(t, url, c.args...)
				out := normalize(r.String(), url)
				golden(t, b.name, c.name, "$ sqlstreams "+strings.Join(c.args, " ")+"\n"+out)
				if strings.Contains(strings.Join(c.args, " ")+" ", "-o json ") && !json.Valid([]byte(r.stdout)) {
					t.Errorf("%s: -o json output does not parse:\n%s", c.name, r.stdout)
				}
			}
		})
	}
}
