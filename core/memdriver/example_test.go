package memdriver_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

type Greeting struct {
	Text string `json:"text"`
}

func (Greeting) SchemaVersion() int { return 1 }

// Open a client on a new in-memory store: nothing to install, nothing left
// behind, as in a unit test of code that produces and consumes.
func ExampleOpen() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	stream := client.Stream[Greeting]("greetings")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(ctx, Greeting{Text: "hello"}); err != nil {
		log.Fatal(err)
	}
	consumer, err := stream.Consumer("printer").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(batch[0].Value.Text, batch[0].Ack(ctx))
	// Output:
	// hello <nil>
}

// Drivers opened on one store share its data, as clients of one database
// do: here a producer's client and a consumer's client.
func ExampleWithStore() {
	ctx := context.Background()
	store := memdriver.NewStore()
	producing, err := sqlstreams.Open(ctx, memdriver.Open(memdriver.WithStore(store)))
	if err != nil {
		log.Fatal(err)
	}
	defer producing.Close()
	consuming, err := sqlstreams.Open(ctx, memdriver.Open(memdriver.WithStore(store)))
	if err != nil {
		log.Fatal(err)
	}
	defer consuming.Close()

	producer, err := producing.Stream[Greeting]("greetings").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(ctx, Greeting{Text: "across clients"}); err != nil {
		log.Fatal(err)
	}
	consumer, err := consuming.Stream[Greeting]("greetings").Consumer("printer").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(batch[0].Value.Text)
	// Output:
	// across clients
}

// A transaction holds the store's single writer until it ends: a write
// outside it waits for at most the busy timeout and then fails with
// ErrConflict, having written nothing. OnCommit runs the application's
// own change only if the transaction commits.
func ExampleBegin() {
	ctx := context.Background()
	drv := memdriver.Open(memdriver.WithBusyTimeout(50 * time.Millisecond))
	client, err := sqlstreams.Open(ctx, drv)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	producer, err := client.Stream[Greeting]("greetings").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	tx, err := memdriver.Begin(ctx, drv)
	if err != nil {
		log.Fatal(err)
	}
	sent := 0
	if _, err := producer.ProduceTx(ctx, tx, Greeting{Text: "in the transaction"}); err != nil {
		log.Fatal(err)
	}
	if err := tx.OnCommit(func() { sent++ }); err != nil {
		log.Fatal(err)
	}
	_, err = producer.Produce(ctx, Greeting{Text: "outside it"})
	fmt.Println("outside while it is open:", errors.Is(err, sqlstreams.ErrConflict))
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent:", sent)
	fmt.Println("ended twice:", errors.Is(tx.Rollback(), memdriver.ErrTxDone))
	// Output:
	// outside while it is open: true
	// sent: 1
	// ended twice: true
}
