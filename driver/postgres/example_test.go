package postgres_test

import (
	"context"
	"errors"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func (OrderPlaced) SchemaVersion() int { return 1 }

// The outbox pattern without an outbox table: the order and its event are
// written in one transaction, so consumers see the event exactly when the
// order exists, and never for an order that rolled back.
func Example_outbox() {
	ctx := context.Background()
	drv := postgres.Open("postgres://app@127.0.0.1:5432/shop?search_path=shop")
	client, err := sqlstreams.Open(ctx, drv) // connects and migrates; errors carry the server's reason
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	producer, err := client.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	tx, err := drv.Pool().Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx) // no-op after Commit

	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, cents) VALUES ($1, $2)`, "o-1", 4200); err != nil {
		log.Fatal(err)
	}
	// Produce last: the event holds its partition's append lock until commit.
	if _, err := producer.ProduceTx(ctx, postgres.Tx(tx), OrderPlaced{OrderID: "o-1", Cents: 4200}, sqlstreams.Key("o-1")); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}

// Connect through a multi-host URL that always reaches the primary, so that
// a failover to a replica needs no change; CockroachDB and YugabyteDB are
// refused with ErrUnsupportedServer.
func Example_failover() {
	ctx := context.Background()
	drv := postgres.Open("postgres://app:secret@db1:5432,db2:5432/app?target_session_attrs=read-write&connect_timeout=5")
	client, err := sqlstreams.Open(ctx, drv)
	if errors.Is(err, postgres.ErrUnsupportedServer) {
		log.Fatal(err) // names the missing capability and what to use instead
	}
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}
