module github.com/sqlstreams/sqlstreams/contrib/protobuf

go 1.27

require (
	github.com/bufbuild/protocompile v0.14.1
	github.com/sqlstreams/sqlstreams/core v0.1.0
	google.golang.org/protobuf v1.36.12
)

require golang.org/x/sync v0.8.0 // indirect
