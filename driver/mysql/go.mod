module github.com/sqlstreams/sqlstreams/driver/mysql

go 1.27

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/sqlstreams/sqlstreams/conformance v0.0.0-00010101000000-000000000000
	github.com/sqlstreams/sqlstreams/core v0.0.0
)

require filippo.io/edwards25519 v1.2.0 // indirect

replace github.com/sqlstreams/sqlstreams/core => ../../core

replace github.com/sqlstreams/sqlstreams/conformance => ../../conformance
