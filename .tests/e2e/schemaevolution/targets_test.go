package schemaevolution

import (
	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
	"github.com/sqlstreams/sqlstreams/driver/sqlite/sqlitetest"
)

// targets lists the drivers every scenario runs on.
func targets() []conformance.Target {
	return []conformance.Target{sqlitetest.Target(), postgrestest.Target(), mysqltest.Target()}
}

func targetsByName() map[string]conformance.Target {
	out := map[string]conformance.Target{}
	for _, t := range targets() {
		out[t.Name] = t
	}
	return out
}
