package drivertest

import (
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// AppendShape is a batch for a driver's own test of how it binds an
// append: the rows AppendShapeRows builds with N rows, changed by Change,
// and whether they share every value but partition, key and payload
// (driver.SharesValues), which lets a driver bind those once.
type AppendShape struct {
	Name   string
	N      int
	Change func(rows []driver.AppendRow)
	Shared bool
}

// AppendShapeRows builds n rows over three partitions that share every
// value but partition, key and payload, produced at at. With compacted,
// every row has a key.
func AppendShapeRows(n int, compacted bool, at time.Time) []driver.AppendRow {
	rows := make([]driver.AppendRow, n)
	for i := range rows {
		rows[i] = driver.AppendRow{Partition: i % 3, SchemaVersion: 2, SchemaRevision: 3, Key: fmt.Sprintf("k%d", i%7), HasKey: compacted || i%4 != 1,
			RoutingKey: "eu.web", CompactionRank: -7, Payload: fmt.Appendf(nil, `{"n":%d}`, i),
			Headers: map[string]string{"trace": "t1", "b": "2"}, ProducedAt: at}
	}
	return rows
}

// AppendShapes are the batches drivers test their appends with: rows that
// share all six values (in several ways), and rows where one value, or
// many, differ. at is the production time AppendShapeRows was given.
func AppendShapes(at time.Time) []AppendShape {
	return []AppendShape{
		{"all shared", 10, nil, true},
		{"all shared, no headers", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].Headers = nil
			}
		}, true},
		{"all shared, empty routing key, zero values", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].SchemaVersion, rows[i].SchemaRevision, rows[i].RoutingKey, rows[i].CompactionRank = 0, 0, "", 0
			}
		}, true},
		{"all shared, times equal to the microsecond", 10, func(rows []driver.AppendRow) {
			rows[3].ProducedAt = at.Add(100 * time.Nanosecond).In(time.FixedZone("x", 3600))
		}, true},
		{"one row", 1, nil, true},
		{"all shared, 250 rows", 250, nil, true},
		{"schema version", 10, func(rows []driver.AppendRow) { rows[3].SchemaVersion = 4 }, false},
		{"schema revision", 10, func(rows []driver.AppendRow) { rows[3].SchemaRevision = 0 }, false},
		{"routing key", 10, func(rows []driver.AppendRow) { rows[3].RoutingKey = "us.app" }, false},
		{"rank", 10, func(rows []driver.AppendRow) { rows[3].CompactionRank = 9 }, false},
		{"headers", 10, func(rows []driver.AppendRow) { rows[3].Headers = map[string]string{"trace": "t2", "b": "2"} }, false},
		{"no headers", 10, func(rows []driver.AppendRow) { rows[3].Headers = nil }, false},
		{"headers on one", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				if i != 3 {
					rows[i].Headers = nil
				}
			}
		}, false},
		{"produced at", 10, func(rows []driver.AppendRow) { rows[3].ProducedAt = at.Add(time.Microsecond) }, false},
		{"first row differs", 10, func(rows []driver.AppendRow) { rows[0].CompactionRank = 1 }, false},
		{"mixed", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].SchemaVersion, rows[i].SchemaRevision, rows[i].RoutingKey = 1+i%2, i%3, fmt.Sprintf("r%d", i%2)
				rows[i].CompactionRank, rows[i].ProducedAt = int64(i%4), at.Add(time.Duration(i)*time.Second)
				if i%2 == 0 {
					rows[i].Headers = map[string]string{"i": fmt.Sprint(i)}
				}
			}
		}, false},
	}
}
