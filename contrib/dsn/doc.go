// Package dsn opens the sqlstreams driver a URL names.
package dsn
