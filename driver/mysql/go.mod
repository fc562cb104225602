module github.com/sqlstreams/sqlstreams/driver/mysql

go 1.27
