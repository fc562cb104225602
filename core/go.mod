module github.com/sqlstreams/sqlstreams/core

go 1.27
