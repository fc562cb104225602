module github.com/sqlstreams/sqlstreams/driver/mysql

go 1.27

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/sqlstreams/sqlstreams/core v0.1.0
)

require filippo.io/edwards25519 v1.2.0 // indirect
