package mysql_test

import (
	"context"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func (OrderPlaced) SchemaVersion() int { return 1 }

// Open a client on MySQL or MariaDB, then write an order row and its event
// in one transaction: both commit, or neither does.
func Example() {
	ctx := context.Background()
	drv := mysql.Open("app:secret@tcp(127.0.0.1:3306)/app")
	client, err := sqlstreams.Open(ctx, drv)
	if err != nil {
		log.Fatal(err) // the server's reason: unreachable, access denied, ...
	}
	defer client.Close()

	producer, err := client.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	tx, err := drv.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, cents) VALUES (?, ?)`, "o-1", 4200); err != nil {
		log.Fatal(err)
	}
	if _, err := producer.ProduceTx(ctx, mysql.Tx(tx), OrderPlaced{OrderID: "o-1", Cents: 4200},
		sqlstreams.Key("o-1")); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}
