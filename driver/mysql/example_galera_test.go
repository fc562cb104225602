package mysql_test

import (
	"context"
	"errors"
	"log"

	gomysql "github.com/go-sql-driver/mysql"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// On a Galera Cluster every node takes writes. A ProduceTx transaction that
// lost a certification conflict to another node fails at COMMIT with 1213:
// run it again.
func ExampleDriver_Server() {
	ctx := context.Background()
	drv := mysql.Open("app:secret@tcp(galera-node-2:3306)/app")
	client, err := sqlstreams.Open(ctx, drv)
	if errors.Is(err, mysql.ErrUnsupportedServer) {
		log.Fatal(err) // TiDB or Vitess: the error names what is missing
	}
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	log.Printf("server %s, Galera: %v", drv.Server().Version, drv.Server().Galera)

	producer, err := client.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		tx, err := drv.DB().BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := producer.ProduceTx(ctx, mysql.Tx(tx), OrderPlaced{OrderID: "A-1", Cents: 1250}); err != nil {
			tx.Rollback()
			log.Fatal(err)
		}
		err = tx.Commit()
		var me *gomysql.MySQLError
		if errors.As(err, &me) && me.Number == 1213 && attempt < 5 {
			continue // certification conflict: nothing was written
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
}
