// Command schemaevolution walks through the two schema-version stories of
// sqlstreams on an embedded SQLite file, printing the health read before,
// during and after each:
//
//  1. A rolling deploy: orders.placed has v1 traffic and a v1 group; v2
//     producers start, a v2 group joins, and v1 is retired once drained.
//
//  2. The bridge: a compacted accounts stream holds v1 heads; a group bound to
//     v1 re-produces each head as v2 at CompactionRank(-1) while live v2
//     writes arrive, until no v1 head remains.
//
//     go run ./schemaevolution     (from the examples directory)
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"` // cents
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

type AccountV1 struct {
	Balance int64 `json:"balance"`
}

func (AccountV1) SchemaVersion() int { return 1 }

type AccountV2 struct {
	Balance Money `json:"balance"`
}

func (AccountV2) SchemaVersion() int { return 2 }

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "sqlstreams-schemaevolution-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(dir, "app.db")),
		sqlstreams.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		return err
	}
	defer client.Close()
	if err := rollingDeploy(ctx, client); err != nil {
		return err
	}
	return bridge(ctx, client)
}

func show(ctx context.Context, client *sqlstreams.Client, stream, title string) error {
	h, err := client.Stream[sqlstreams.RawPayload](stream).Health(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("\n-- %s\n", title)
	return h.WriteTable(os.Stdout)
}

// drain claims and acks until nothing is left, handing each value to handle.
func drain[T sqlstreams.Versioned](ctx context.Context, c *sqlstreams.Consumer[T], handle func(sqlstreams.Delivery[T]) error) (int, error) {
	n := 0
	for {
		ds, err := c.Claim(ctx, 100)
		if err != nil || len(ds) == 0 {
			return n, err
		}
		for _, d := range ds {
			if err := handle(d); err != nil {
				return n, err
			}
		}
		if err := c.Ack(ctx, ds...); err != nil {
			return n, err
		}
		n += len(ds)
	}
}

func rollingDeploy(ctx context.Context, client *sqlstreams.Client) error {
	fmt.Println("== 1. Rolling deploy on orders.placed")
	orders1 := client.Stream[OrderPlacedV1]("orders.placed")
	orders2 := client.Stream[OrderPlacedV2]("orders.placed")
	v1, err := orders1.Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	fraud, err := orders1.Consumer("fraud-scoring").Register(ctx, nil)
	if err != nil {
		return err
	}
	for i := range 5 {
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprintf("o-%d", i), Total: 1999}); err != nil {
			return err
		}
	}
	if err := show(ctx, client, "orders.placed", "before: v1 traffic, fraud-scoring has not caught up"); err != nil {
		return err
	}

	// The deploy: v2 producers start while v1 producers still run.
	v2, err := orders2.Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	fraudV2, err := orders2.Consumer("fraud-scoring-v2").Register(ctx, nil)
	if err != nil {
		return err
	}
	for i := range 3 {
		if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: fmt.Sprintf("o2-%d", i), Total: Money{Cents: 2599, Currency: "EUR"}}); err != nil {
			return err
		}
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprintf("late-%d", i), Total: 999}); err != nil {
			return err
		}
	}
	n2, err := drain(ctx, fraudV2, func(sqlstreams.Delivery[OrderPlacedV2]) error { return nil })
	if err != nil {
		return err
	}
	fmt.Printf("\nfraud-scoring-v2 read %d v2 orders and stepped over every v1 row\n", n2)
	if err := show(ctx, client, "orders.placed", "during: both versions produced, v1 still unread"); err != nil {
		return err
	}

	// v1 producers stop; the v1 group drains the last v1 rows.
	n1, err := drain(ctx, fraud, func(sqlstreams.Delivery[OrderPlacedV1]) error { return nil })
	if err != nil {
		return err
	}
	fmt.Printf("\nfraud-scoring read %d v1 orders and stepped over every v2 row\n", n1)
	return show(ctx, client, "orders.placed", "after: v1 drained, so v1 is retirable although its rows stay in the log")
}

func bridge(ctx context.Context, client *sqlstreams.Client) error {
	fmt.Println("\n== 2. The bridge on the compacted accounts stream")
	if _, err := client.Stream[AccountV1]("accounts").Create(ctx, &sqlstreams.StreamOptions{Compacted: true}); err != nil {
		return err
	}
	v1, err := client.Stream[AccountV1]("accounts").Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	v2, err := client.Stream[AccountV2]("accounts").Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for i := 1; i <= 6; i++ {
		if _, err := v1.Produce(ctx, AccountV1{Balance: int64(i * 100)}, sqlstreams.Key(fmt.Sprintf("acct-%d", i))); err != nil {
			return err
		}
	}
	if err := show(ctx, client, "accounts", "before: six v1 heads"); err != nil {
		return err
	}
	bridgeGroup, err := client.Stream[AccountV1]("accounts").Consumer("bridge").Register(ctx, nil)
	if err != nil {
		return err
	}
	// A live v2 write arrives before the bridge reaches acct-2; another
	// arrives after the bridge copied acct-5. Both live writes stay heads.
	if _, err := v2.Produce(ctx, AccountV2{Balance: Money{Cents: 250, Currency: "EUR"}}, sqlstreams.Key("acct-2")); err != nil {
		return err
	}
	var copies atomic.Int64
	copyForward := func(d sqlstreams.Delivery[AccountV1]) error {
		copies.Add(1)
		_, err := v2.Produce(ctx, AccountV2{Balance: Money{Cents: d.Value.Balance, Currency: "EUR"}}, sqlstreams.Key(d.Key), sqlstreams.CompactionRank(-1))
		return err
	}
	ds, err := bridgeGroup.Claim(ctx, 3)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if err := copyForward(d); err != nil {
			return err
		}
	}
	if err := bridgeGroup.Ack(ctx, ds...); err != nil {
		return err
	}
	if err := show(ctx, client, "accounts", "during: the bridge copied three heads forward"); err != nil {
		return err
	}
	if _, err := drain(ctx, bridgeGroup, copyForward); err != nil {
		return err
	}
	if _, err := v2.Produce(ctx, AccountV2{Balance: Money{Cents: 555, Currency: "EUR"}}, sqlstreams.Key("acct-5")); err != nil {
		return err
	}
	if _, err := client.Maintain(ctx); err != nil { // compaction drops superseded rows
		return err
	}
	fmt.Printf("\nthe bridge made %d copies; acct-2 was already v2, so it was passed over\n", copies.Load())
	if err := show(ctx, client, "accounts", "after: no v1 head remains, so v1 is retirable"); err != nil {
		return err
	}
	heads, err := client.Stream[sqlstreams.RawPayload]("accounts").Consumer("audit").Register(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Println("\nheads now:")
	_, err = drain(ctx, heads, func(d sqlstreams.Delivery[sqlstreams.RawPayload]) error {
		fmt.Printf("  %-7s v%d rank %2d  %s\n", d.Key, d.SchemaVersion, d.CompactionRank, d.Value.Data)
		return nil
	})
	return err
}
