package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// Settles are planned for their own arguments at each run (settleQuery):
// a generic plan cached before the planner knew the table read a group's
// every exception to settle one lease behind a backlog. The default mode
// caches only the statement's description; modes a URL or an option chose,
// which plan at each run already, are kept.
func TestSettlesArePlannedPerRun(t *testing.T) {
	t.Parallel()
	const url = "postgres://u@127.0.0.1:1/db"
	for _, c := range []struct {
		name string
		drv  *Driver
		want pgx.QueryExecMode
	}{
		{"default", Open(url), pgx.QueryExecModeCacheDescribe},
		{"WithSimpleProtocol", Open(url, WithSimpleProtocol()), pgx.QueryExecModeSimpleProtocol},
		{"URL exec mode", Open(url + "?default_query_exec_mode=exec"), pgx.QueryExecModeExec},
	} {
		if c.drv.settleMode != c.want {
			t.Errorf("%s: settles run in mode %v, want %v", c.name, c.drv.settleMode, c.want)
		}
		_ = c.drv.Close()
	}
}
