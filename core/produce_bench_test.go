package sqlstreams

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

type benchOrder struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Cents    int64   `json:"cents"`
	Currency string  `json:"currency"`
	Items    []int64 `json:"items"`
}

func (benchOrder) SchemaVersion() int { return 1 }

// BenchmarkProduceRows is what the produce path spends in Go per batch of
// 100 before the driver: options, validation, JSON encoding, row building.
func BenchmarkProduceRows(b *testing.B) {
	cfg := driver.StreamConfig{ID: 1, Name: "bench", Partitions: 4}
	p := &Producer[benchOrder]{version: 1, byPointer: encodesByPointer(reflect.TypeFor[benchOrder]())}
	p.stream.Store(&cfg)
	msgs := make([]Message[benchOrder], 100)
	for i := range msgs {
		msgs[i] = NewMessage(benchOrder{OrderID: fmt.Sprintf("order-%08d", i), Customer: fmt.Sprintf("cust-%05d", i), Cents: int64(i * 7),
			Currency: "EUR", Items: []int64{int64(i), int64(i + 1), int64(i + 2)}}, Key(fmt.Sprintf("k%d", i)), RoutingKey("eu.web"))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.rows(cfg, msgs, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
