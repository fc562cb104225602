package mysql_test

import "github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"

var (
	newDatabase = mysqltest.NewDatabase
	adminDB     = mysqltest.AdminDB
	withParams  = mysqltest.WithParams
)
