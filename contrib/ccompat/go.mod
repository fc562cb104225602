module github.com/sqlstreams/sqlstreams/contrib/ccompat

go 1.27

require (
	github.com/sqlstreams/sqlstreams/contrib/avro v0.1.0
	github.com/sqlstreams/sqlstreams/contrib/protobuf v0.1.0
	github.com/sqlstreams/sqlstreams/core v0.1.0
)

require (
	github.com/bufbuild/protocompile v0.14.1 // indirect
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/hamba/avro/v2 v2.31.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	golang.org/x/sync v0.19.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
