module github.com/sqlstreams/sqlstreams/conformance

go 1.27

require github.com/sqlstreams/sqlstreams/core v0.0.0

replace github.com/sqlstreams/sqlstreams/core => ../core
