module github.com/sqlstreams/sqlstreams/tests/release

go 1.27

require golang.org/x/mod v0.43.0
