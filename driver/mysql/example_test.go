package mysql_test

import (
	"context"
	"errors"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
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

// Handle an order event as an inbox: the handler's own write and the ack
// commit together, so a crash between them can neither lose the write nor
// do it twice.
func Example_ackTx() {
	ctx := context.Background()
	drv := mysql.Open("app:secret@tcp(127.0.0.1:3306)/app")
	client, err := sqlstreams.Open(ctx, drv)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	consumer, err := client.Stream[OrderPlaced]("orders.placed").Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	deliveries, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range deliveries {
		tx, err := drv.DB().BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO invoices (order_id, cents) VALUES (?, ?)`, d.Value.OrderID, d.Value.Cents); err != nil {
			tx.Rollback()
			log.Fatal(err)
		}
		if err := d.AckTx(ctx, mysql.Tx(tx)); err != nil {
			tx.Rollback() // the lease was lost: another member has it
			continue
		}
		if err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
	}
}

// Code handed a driver.Tx (a middleware, a helper shared by drivers) gets
// the *sql.Tx back to write in the same transaction.
func ExampleUnwrapTx() {
	record := func(ctx context.Context, tx driver.Tx, note string) error {
		stx, ok := mysql.UnwrapTx(tx)
		if !ok {
			return errors.New("not a mysql transaction")
		}
		_, err := stx.ExecContext(ctx, `INSERT INTO audit (note) VALUES (?)`, note)
		return err
	}
	_ = record
}
