module github.com/sqlstreams/sqlstreams/contrib/jsonschema

go 1.27

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/sqlstreams/sqlstreams/core v0.1.0
	golang.org/x/text v0.41.0
)
