module github.com/sqlstreams/sqlstreams/scaleout

go 1.27

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/jackc/pgx/v5 v5.12.0
	github.com/sqlstreams/sqlstreams/conformance v0.0.0
	github.com/sqlstreams/sqlstreams/core v0.0.0
	github.com/sqlstreams/sqlstreams/driver/mysql v0.0.0
	github.com/sqlstreams/sqlstreams/driver/postgres v0.0.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace (
	github.com/sqlstreams/sqlstreams/conformance => ../../conformance
	github.com/sqlstreams/sqlstreams/core => ../../core
	github.com/sqlstreams/sqlstreams/driver/mysql => ../../driver/mysql
	github.com/sqlstreams/sqlstreams/driver/postgres => ../../driver/postgres
	github.com/sqlstreams/sqlstreams/driver/sqlite => ../../driver/sqlite
)
