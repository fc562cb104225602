// Command outbox shows the outbox pattern without an outbox table on
// PostgreSQL: an order row and its OrderPlaced event are written in one
// transaction, so consumers see the event exactly when the order exists, and
// never for an order whose transaction rolled back.
//
//	go run ./outbox                 (from the examples directory)
//	go run ./outbox -url postgres://app@db:5432/shop
//
// It works in a schema of its own (sqlstreams_outbox_example), which it
// drops at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func (OrderPlaced) SchemaVersion() int { return 1 }

const schema = "sqlstreams_outbox_example"

func main() {
	def := os.Getenv("SQLSTREAMS_POSTGRES_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	server := flag.String("url", def, "PostgreSQL URL")
	flag.Parse()
	if err := run(*server); err != nil {
		log.Fatal(err)
	}
}

func run(server string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", server, err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE; CREATE SCHEMA `+schema+`;
		CREATE TABLE `+schema+`.orders (id text PRIMARY KEY, cents bigint NOT NULL)`); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)

	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drv := postgres.Open(u.String())
	client, err := sqlstreams.Open(ctx, drv, sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer client.Close()
	orders := client.Stream[OrderPlaced]("orders.placed")
	producer, err := orders.Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	shipping, err := orders.Consumer("shipping").Register(ctx, nil)
	if err != nil {
		return err
	}

	// placeOrder writes the order and its event in one transaction.
	placeOrder := func(id string, cents int64, fail bool) error {
		tx, err := drv.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) // a no-op after Commit
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, cents) VALUES ($1, $2)`, id, cents); err != nil {
			return err
		}
		// Produce last: the event holds its partition's append lock until commit.
		if _, err := producer.ProduceTx(ctx, postgres.Tx(tx), OrderPlaced{OrderID: id, Cents: cents}, sqlstreams.Key(id)); err != nil {
			return err
		}
		if fail {
			return errors.New("payment declined")
		}
		return tx.Commit(ctx)
	}
	if err := placeOrder("o-1", 4200, false); err != nil {
		return err
	}
	fmt.Println("o-1: order and event committed together")
	if err := placeOrder("o-2", 990, true); err != nil {
		fmt.Printf("o-2: %v; the order and its event rolled back together\n", err)
	}
	if err := placeOrder("o-3", 1500, false); err != nil {
		return err
	}
	fmt.Println("o-3: order and event committed together")

	ds, err := shipping.Claim(ctx, 10)
	if err != nil {
		return err
	}
	for _, d := range ds {
		var cents int64
		err := drv.Pool().QueryRow(ctx, `SELECT cents FROM orders WHERE id = $1`, d.Value.OrderID).Scan(&cents)
		fmt.Printf("shipping got %s; the order row exists: %v\n", d.Value.OrderID, err == nil && cents == d.Value.Cents)
	}
	if err := shipping.Ack(ctx, ds...); err != nil {
		return err
	}
	fmt.Printf("%d events for 2 committed orders\n", len(ds))
	return nil
}
