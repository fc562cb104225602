module github.com/sqlstreams/sqlstreams/contrib/ccompat

go 1.27

require github.com/sqlstreams/sqlstreams/core v0.1.0
