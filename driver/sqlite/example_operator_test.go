package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// An operator reaches a group by name alone, whatever version it reads:
// describe it, read a dead letter with its failure history, replay it.
func ExampleStream_Group() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	producer, err := client.Stream[OrderPlacedV2]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	id, err := producer.Produce(ctx, OrderPlacedV2{OrderID: "o-1", Total: Money{Cents: 1250, Currency: "EUR"}})
	if err != nil {
		log.Fatal(err)
	}
	consumer, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	ds, err := consumer.Claim(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	if err := ds[0].Dead(ctx, errors.New("card declined")); err != nil {
		log.Fatal(err)
	}

	// No Go type of the group's version is needed.
	group := client.Stream[sqlstreams.RawPayload]("orders.placed").Group("billing")
	d, err := group.Describe(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("group %s reads v%d, cursor %d of %d, %d dead\n", d.Group, d.SchemaVersion, d.Partitions[0].Cursor, d.Partitions[0].HighWater, d.Dead)
	dl, err := group.DeadLetter(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range dl.History {
		fmt.Printf("attempt %d failed: %s\n", f.Attempt, f.Error)
	}
	n, err := group.Replay(ctx, id)
	fmt.Println("replayed", n, err)
	// Output:
	// group billing reads v2, cursor 1 of 1, 1 dead
	// attempt 1 failed: card declined
	// replayed 1 <nil>
}

// ResetCursors moves a group like kafka-consumer-groups --reset-offsets:
// plan with DryRun, then apply.
func ExampleGroupAdmin_ResetCursors() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprint("o-", i)}); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("audit").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	ds, _ := consumer.Claim(ctx, 10)
	_ = consumer.Ack(ctx, ds...)

	group := client.Stream[sqlstreams.RawPayload]("orders.placed").Group("audit")
	plan, err := group.ResetCursors(ctx, sqlstreams.ResetOptions{To: sqlstreams.ResetShift(-2), DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("plan: partition %d from %d to %d\n", plan[0].Partition, plan[0].From, plan[0].To)
	if _, err := group.ResetCursors(ctx, sqlstreams.ResetOptions{To: sqlstreams.ResetShift(-2)}); err != nil {
		log.Fatal(err)
	}
	again, _ := consumer.Claim(ctx, 10)
	fmt.Println("read again:", len(again))
	// Output:
	// plan: partition 0 from 3 to 1
	// read again: 2
}

// Browse reads the log without claiming anything.
func ExampleStream_Browse() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprint("o-", i)}, sqlstreams.Key(fmt.Sprint("acct-", i%2))); err != nil {
			log.Fatal(err)
		}
	}
	key := "acct-0"
	page, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Browse(ctx, sqlstreams.BrowseOptions{Key: &key})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range page.Records {
		fmt.Printf("#%d v%d %s %s\n", r.ID, r.SchemaVersion, r.Key, r.Payload)
	}
	// Output:
	// #1 v1 acct-0 {"order_id":"o-0","total":0}
	// #3 v1 acct-0 {"order_id":"o-2","total":0}
}

// Teams that run migrations themselves migrate with a Migrator (or take its
// SQL) and open clients with WithoutMigrate, which refuses an outdated
// schema instead of changing it.
func ExampleNewMigrator() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")

	_, err = sqlstreams.Open(ctx, sqlite.Open(path), sqlstreams.WithoutMigrate())
	fmt.Println(errors.Is(err, sqlstreams.ErrSchemaOutdated))

	drv := sqlite.Open(path)
	steps, err := sqlstreams.NewMigrator(drv).Migrate(ctx, sqlstreams.MigrateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("applied", len(steps), "migrations, the first:", steps[0].Name)
	client, err := sqlstreams.Open(ctx, drv, sqlstreams.WithoutMigrate())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	fmt.Println("open")
	// Output:
	// true
	// applied 17 migrations, the first: 0001_init.sql
	// open
}

// AckTx records the outcome in the application's own transaction: the
// handler's writes and the ack commit together, or neither does.
func ExampleDelivery_AckTx() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	drv, _ := sqlstreams.DriverAs[*sqlite.Driver](client)
	if _, err := drv.DB().ExecContext(ctx, `CREATE TABLE invoice (order_id TEXT PRIMARY KEY)`); err != nil {
		log.Fatal(err)
	}
	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 1250}); err != nil {
		log.Fatal(err)
	}
	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("invoicing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	ds, err := consumer.Claim(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	tx, err := drv.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoice (order_id) VALUES (?)`, ds[0].Value.OrderID); err != nil {
		log.Fatal(err)
	}
	if err := ds[0].AckTx(ctx, sqlite.Tx(tx)); err != nil {
		_ = tx.Rollback() // the lease was lost: another member has it
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	h, _ := client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	g := h.Versions[0].Groups[0]
	fmt.Println("unread", g.Unread, "unresolved", g.Unresolved)
	// Output:
	// unread 0 unresolved 0
}
