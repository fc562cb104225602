module github.com/sqlstreams/sqlstreams/driver/postgres

go 1.27
