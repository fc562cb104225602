package schemaevolution

import (
	"github.com/sqlstreams/sqlstreams/conformance"
	drivertargets "github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// targets lists the drivers every scenario runs on.
func targets() []conformance.Target {
	return []conformance.Target{drivertargets.SQLite(), drivertargets.Postgres(), drivertargets.MySQL()}
}

func targetsByName() map[string]conformance.Target {
	out := map[string]conformance.Target{}
	for _, t := range targets() {
		out[t.Name] = t
	}
	return out
}
