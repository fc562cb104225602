package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// OrderPlacedV1 is the first shape of an order event: the total in cents.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// Money is an amount with its currency.
type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlacedV2 changed Total to Money: a new shape, so a new version.
type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

// exampleClient opens a client on a new SQLite file; done closes it and
// removes the file.
func exampleClient() (client *sqlstreams.Client, drv *sqlite.Driver, done func()) {
	dir, err := os.MkdirTemp("", "sqlstreams-example-")
	if err != nil {
		log.Fatal(err)
	}
	drv = sqlite.Open(filepath.Join(dir, "app.db"))
	client, err = sqlstreams.Open(context.Background(), drv)
	if err != nil {
		log.Fatal(err)
	}
	return client, drv, func() {
		client.Close()
		os.RemoveAll(dir)
	}
}

// Open a client on an embedded SQLite file, produce typed messages and
// consume them with Run. The handler's nil return resolves each delivery.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	client, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(dir, "app.db")))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	stream := client.Stream[OrderPlacedV2]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil) // creates the stream
	if err != nil {
		log.Fatal(err)
	}
	for i, id := range []string{"o-1", "o-2", "o-3"} {
		order := OrderPlacedV2{OrderID: id, Total: Money{Cents: int64(1000 * (i + 1)), Currency: "EUR"}}
		if _, err := producer.Produce(ctx, order, sqlstreams.Key("acct-1")); err != nil {
			log.Fatal(err)
		}
	}

	consumer, err := stream.Consumer("fraud-scoring").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	handled := 0
	err = consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
		fmt.Printf("%s %d %s (schema v%d, attempt %d)\n", d.Value.OrderID, d.Value.Total.Cents, d.Value.Total.Currency, d.SchemaVersion, d.Attempt)
		if handled++; handled == 3 {
			stop() // Run returns nil once its context ends
		}
		return nil
	})
	fmt.Println("run:", err)
	// Output:
	// o-1 1000 EUR (schema v2, attempt 1)
	// o-2 2000 EUR (schema v2, attempt 1)
	// o-3 3000 EUR (schema v2, attempt 1)
	// run: <nil>
}

// Pull deliveries with Claim and record each outcome yourself: Ack resolves,
// Retry schedules another attempt, Dead buries.
func Example_claim() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"o-1", "o-2"} {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: id, Total: 995}); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Println("claimed", d.Value.OrderID)
	}
	if err := batch[0].Ack(ctx); err != nil {
		log.Fatal(err)
	}
	if err := batch[1].Retry(ctx, 0, errors.New("ledger busy")); err != nil {
		log.Fatal(err)
	}

	again, err := consumer.Claim(ctx, 10) // the retry is due at once
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range again {
		fmt.Println("claimed", d.Value.OrderID, "attempt", d.Attempt)
	}
	if err := consumer.Ack(ctx, again...); err != nil {
		log.Fatal(err)
	}
	rest, err := consumer.Claim(ctx, 10)
	fmt.Println("left:", len(rest), err)
	// Output:
	// claimed o-1
	// claimed o-2
	// claimed o-2 attempt 2
	// left: 0 <nil>
}

// Work through a stream batch by batch with AckAndClaim: each call acks the
// batch handled last and claims the next in one transaction, one commit per
// batch where Ack then Claim make two. The last call, with nothing left,
// still records its acks.
func Example_ackAndClaim() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprintf("o-%d", i), Total: 995}); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	var batch []sqlstreams.Delivery[OrderPlacedV1]
	for {
		batch, err = consumer.AckAndClaim(ctx, 2, batch...)
		var lost *sqlstreams.SettleError
		if errors.As(err, &lost) {
			// Those acks were not recorded (another member holds the
			// deliveries now); the new batch was claimed all the same.
			log.Print(lost)
		} else if err != nil {
			log.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		var ids []string
		for _, d := range batch {
			ids = append(ids, d.Value.OrderID)
		}
		fmt.Println(ids)
	}
	h, err := stream.Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	v, _ := h.Version(1)
	fmt.Println("unresolved:", v.Groups[0].Unresolved)
	// Output:
	// [o-1 o-2]
	// [o-3 o-4]
	// [o-5]
	// unresolved: 0
}

// ProduceBatch writes messages with their own keys and routing keys in one
// transaction. A group's bindings select routing keys ('*' is one word, '#'
// zero or more).
func Example_produceBatch() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	stream := client.Stream[OrderPlacedV2]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := producer.ProduceBatch(ctx,
		sqlstreams.NewMessage(OrderPlacedV2{OrderID: "o-1"}, sqlstreams.Key("acct-1"), sqlstreams.RoutingKey("eu.web")),
		sqlstreams.NewMessage(OrderPlacedV2{OrderID: "o-2"}, sqlstreams.Key("acct-2"), sqlstreams.RoutingKey("us.web")),
		sqlstreams.NewMessage(OrderPlacedV2{OrderID: "o-3"}, sqlstreams.Key("acct-1"), sqlstreams.RoutingKey("eu.app.ios")),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("produced", len(ids), "messages")

	europe, err := stream.Consumer("eu-audit").Register(ctx, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
	if err != nil {
		log.Fatal(err)
	}
	batch, err := europe.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Println(d.Value.OrderID, d.RoutingKey)
	}
	if err := europe.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}
	// Output:
	// produced 3 messages
	// o-1 eu.web
	// o-3 eu.app.ios
}

// ProduceTx appends a message in your own transaction, begun on the
// driver's DB and adapted with sqlite.Tx: consumers see it only if the
// transaction commits. Register producers before beginning the
// transaction: SQLite has one writer, and the open transaction holds it.
func Example_produceTx() {
	ctx := context.Background()
	client, drv, done := exampleClient()
	defer done()

	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("shipping").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	db := drv.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER)`); err != nil {
		log.Fatal(err)
	}

	place := func(order OrderPlacedV1, commit bool) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, total) VALUES (?, ?)`, order.OrderID, order.Total); err != nil {
			log.Fatal(err)
		}
		if _, err := producer.ProduceTx(ctx, sqlite.Tx(tx), order); err != nil {
			log.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	place(OrderPlacedV1{OrderID: "o-1", Total: 1200}, true)
	place(OrderPlacedV1{OrderID: "o-2", Total: 800}, false) // rolled back: no row, no message

	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Println("ship", d.Value.OrderID)
	}
	if err := consumer.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ship o-1
}

// A handler's return decides the outcome: Dead dead-letters at once,
// RetryAfter retries after a delay of its choosing. Dead letters keep their
// error for inspection until replayed or discarded.
func Example_deadLetters() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	stream := client.Stream[OrderPlacedV2]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range []OrderPlacedV2{
		{OrderID: "o-1", Total: Money{Cents: 500, Currency: "EUR"}},
		{OrderID: "o-2", Total: Money{Cents: 500, Currency: "XXX"}},
		{OrderID: "o-3", Total: Money{Cents: 900, Currency: "USD"}},
	} {
		if _, err := producer.Produce(ctx, o); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("payments").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	err = consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
		switch {
		case d.Value.Total.Currency == "XXX":
			fmt.Println(d.Value.OrderID, "dead-lettered")
			return sqlstreams.Dead(fmt.Errorf("unknown currency %q", d.Value.Total.Currency))
		case d.Value.Total.Currency == "USD" && d.Attempt == 1:
			fmt.Println(d.Value.OrderID, "retry later")
			return sqlstreams.RetryAfter(20*time.Millisecond, errors.New("exchange rate service busy"))
		}
		fmt.Println(d.Value.OrderID, "paid on attempt", d.Attempt)
		if d.Value.OrderID == "o-3" {
			stop()
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	dead, err := consumer.DeadLetters(ctx, 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, dl := range dead {
		fmt.Printf("dead: %s after %d attempt(s): %s\n", dl.Payload, dl.Attempt, dl.Error)
	}
	n, err := consumer.DiscardAll(ctx)
	fmt.Println("discarded", n, err)
	// Output:
	// o-1 paid on attempt 1
	// o-2 dead-lettered
	// o-3 retry later
	// o-3 paid on attempt 2
	// dead: {"order_id":"o-2","total":{"cents":500,"currency":"XXX"}} after 1 attempt(s): unknown currency "XXX"
	// discarded 1 <nil>
}

// Health reads a stream per schema version: rows, compaction heads, and each
// group's unread and unresolved deliveries, with the retirement verdict. A
// version whose groups are drained is retirable even while its rows remain.
func Example_health() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	v1, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := client.Stream[OrderPlacedV2]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	old, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("fraud-scoring").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("fraud-scoring-v2").Register(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprint("a-", i), Total: 100}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "b-0", Total: Money{Cents: 100, Currency: "EUR"}}); err != nil {
		log.Fatal(err)
	}
	// The v1 group drains its version; the v2 group has not started.
	batch, err := old.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	if err := old.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}

	health, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := health.WriteTable(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// stream orders.placed (high-water id 4)
	// VERSION  ROWS  HEADS  GROUP             UNREAD  LEASED  DELAYED  DEAD  DISTANCE  VERDICT
	// v1       3     0      fraud-scoring     0       0       0        0     0         retirable
	// v2       1     0      fraud-scoring-v2  1       0       0        0     4         group fraud-scoring-v2 has 1 unread
}

// A compacted stream keeps each key's head: the greatest (schema version,
// compaction rank, id). A bridge group bound to the old type re-produces each
// head as the new type at rank -1: the copy beats the v1 head and loses to a
// live v2 write of the same key.
func Example_compacted() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()

	accounts := client.Stream[OrderPlacedV1]("accounts.balance")
	if _, err := accounts.Create(ctx, &sqlstreams.StreamOptions{Compacted: true}); err != nil {
		log.Fatal(err)
	}
	v1, err := accounts.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := client.Stream[OrderPlacedV2]("accounts.balance").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, acct := range []string{"acct-1", "acct-2"} {
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: acct, Total: 700}, sqlstreams.Key(acct)); err != nil {
			log.Fatal(err)
		}
	}
	verdict := func() string {
		h, err := client.Stream[sqlstreams.RawPayload]("accounts.balance").Health(ctx)
		if err != nil {
			log.Fatal(err)
		}
		vh, _ := h.Version(1)
		return vh.Verdict()
	}
	fmt.Println("v1 before the bridge:", verdict())

	bridge, err := accounts.Consumer("bridge-v1-to-v2").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	heads, err := bridge.Claim(ctx, 100)
	if err != nil {
		log.Fatal(err)
	}
	// A live v2 write for acct-2 arrives while the bridge works.
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "acct-2", Total: Money{Cents: 650, Currency: "EUR"}}, sqlstreams.Key("acct-2")); err != nil {
		log.Fatal(err)
	}
	for _, d := range heads {
		copied := OrderPlacedV2{OrderID: d.Value.OrderID, Total: Money{Cents: d.Value.Total, Currency: "EUR"}}
		if _, err := v2.Produce(ctx, copied, sqlstreams.Key(d.Key), sqlstreams.CompactionRank(-1)); err != nil {
			log.Fatal(err)
		}
	}
	if err := bridge.Ack(ctx, heads...); err != nil {
		log.Fatal(err)
	}

	readers, err := client.Stream[OrderPlacedV2]("accounts.balance").Consumer("balances-v2").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	current, err := readers.Claim(ctx, 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range current {
		fmt.Printf("%s: %d %s (rank %d)\n", d.Key, d.Value.Total.Cents, d.Value.Total.Currency, d.CompactionRank)
	}
	if err := readers.Ack(ctx, current...); err != nil {
		log.Fatal(err)
	}
	fmt.Println("v1 after the bridge:", verdict())
	// Output:
	// v1 before the bridge: compaction heads remain
	// acct-2: 650 EUR (rank 0)
	// acct-1: 700 EUR (rank -1)
	// v1 after the bridge: retirable
}
