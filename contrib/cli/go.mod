module github.com/sqlstreams/sqlstreams/contrib/cli

go 1.27

require github.com/sqlstreams/sqlstreams/core v0.0.0

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)

replace (
	github.com/sqlstreams/sqlstreams/conformance => ../../conformance
	github.com/sqlstreams/sqlstreams/core => ../../core
	github.com/sqlstreams/sqlstreams/driver/mysql => ../../driver/mysql
	github.com/sqlstreams/sqlstreams/driver/postgres => ../../driver/postgres
	github.com/sqlstreams/sqlstreams/driver/sqlite => ../../driver/sqlite
)
