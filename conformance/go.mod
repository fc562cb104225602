module github.com/sqlstreams/sqlstreams/conformance

go 1.27
