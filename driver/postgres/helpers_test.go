package postgres_test

import "github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"

var (
	newSchema = postgrestest.NewSchema
	baseURL   = postgrestest.BaseURL
)
