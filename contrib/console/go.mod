module github.com/sqlstreams/sqlstreams/contrib/console

go 1.27

require github.com/sqlstreams/sqlstreams/core v0.0.0

replace (
	github.com/sqlstreams/sqlstreams/conformance => ../../conformance
	github.com/sqlstreams/sqlstreams/core => ../../core
	github.com/sqlstreams/sqlstreams/driver/mysql => ../../driver/mysql
	github.com/sqlstreams/sqlstreams/driver/postgres => ../../driver/postgres
	github.com/sqlstreams/sqlstreams/driver/sqlite => ../../driver/sqlite
)
