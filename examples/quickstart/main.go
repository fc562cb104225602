// Command quickstart shows schema versions on one stream, on an embedded
// SQLite file with nothing to set up: v1 and v2 producers share the log, a
// consumer group per version reads only its own rows, a poison message is
// dead-lettered, and the health read says which version can be retired.
//
//	go run ./quickstart            (from the examples directory)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// OrderPlacedV1 is the first shape: the total in cents.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// Money is the total with its currency.
type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlacedV2 changed Total to Money: a new version, a new type.
type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

func main() {
	dir := flag.String("dir", "", "directory for the database file (default: a new temporary directory)")
	flag.Parse()
	if err := run(*dir); err != nil {
		log.Fatal(err)
	}
}

// run walks through the quickstart on a database file in dir, or in a
// temporary directory removed afterwards when dir is empty.
func run(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sqlstreams-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	path := filepath.Join(dir, "quickstart.db")
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	client, err := sqlstreams.Open(ctx, sqlite.Open(path), sqlstreams.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Printf("database: %s\n\n", path)

	if err := produceOrders(ctx, client); err != nil {
		return err
	}
	groupV1, groupV2, err := registerGroups(ctx, client)
	if err != nil {
		return err
	}
	consume(ctx, groupV1, groupV2)
	return retireV2(ctx, client, groupV2)
}

// produceOrders writes three v1 and four v2 orders, one of them poison, to
// one stream: producers of both versions share the log.
func produceOrders(ctx context.Context, client *sqlstreams.Client) error {
	v1, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	v2, err := client.Stream[OrderPlacedV2]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for i := 1; i <= 3; i++ {
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprintf("A-%d", i), Total: int64(1000 * i)}, sqlstreams.Key("acct-1")); err != nil {
			return err
		}
	}
	for i := 1; i <= 3; i++ {
		if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: fmt.Sprintf("B-%d", i), Total: Money{Cents: int64(2500 * i), Currency: "EUR"}}); err != nil {
			return err
		}
	}
	// A poison message: a negative total the v2 handler refuses for good.
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "B-bad", Total: Money{Cents: -1, Currency: "EUR"}}); err != nil {
		return err
	}
	fmt.Println("produced 3 v1 orders, 4 v2 orders (one of them poison)")
	return nil
}

// registerGroups registers one group per version: each reads only rows at
// its type's version, and a group cannot be registered at another version.
func registerGroups(ctx context.Context, client *sqlstreams.Client) (*sqlstreams.Consumer[OrderPlacedV1], *sqlstreams.Consumer[OrderPlacedV2], error) {
	groupV1, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("fraud-scoring").Register(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	groupV2, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("fraud-scoring-v2").Register(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	// Registering the v2 type under the v1 group is refused with advice.
	if _, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("fraud-scoring").Register(ctx, nil); errors.Is(err, sqlstreams.ErrGroupVersion) {
		fmt.Printf("\nrefused as expected:\n  %v\n\n", err)
	}
	return groupV1, groupV2, nil
}

// consume runs both groups until each has handled every order produced;
// the v2 handler dead-letters the poison one.
func consume(ctx context.Context, groupV1 *sqlstreams.Consumer[OrderPlacedV1], groupV2 *sqlstreams.Consumer[OrderPlacedV2]) {
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var seen sync.WaitGroup
	seen.Add(3 + 4)
	wg.Go(func() {
		_ = groupV1.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV1]) error {
			defer seen.Done()
			say("fraud-scoring    (v1) got %s total=%d cents", d.Value.OrderID, d.Value.Total)
			return nil
		})
	})
	wg.Go(func() {
		_ = groupV2.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
			defer seen.Done()
			if d.Value.Total.Cents < 0 {
				say("fraud-scoring-v2 (v2) got %s: negative total, dead-lettering it", d.Value.OrderID)
				return sqlstreams.Dead(fmt.Errorf("order %s has a negative total", d.Value.OrderID))
			}
			say("fraud-scoring-v2 (v2) got %s total=%d %s", d.Value.OrderID, d.Value.Total.Cents, d.Value.Total.Currency)
			return nil
		})
	})
	seen.Wait()
	stop()
	wg.Wait()
}

// retireV2 shows the dead letter and the health read, whose verdict keeps
// v2 from being retired while it has a dead letter, then discards it and
// reads health again.
func retireV2(ctx context.Context, client *sqlstreams.Client, groupV2 *sqlstreams.Consumer[OrderPlacedV2]) error {
	dead, err := groupV2.DeadLetters(ctx, 0, 10)
	if err != nil {
		return err
	}
	for _, d := range dead {
		fmt.Printf("\ndead letter %d (v%d) after %d attempt(s): %s\n", d.ID, d.SchemaVersion, d.Attempt, d.Error)
	}

	health, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	if err != nil {
		return err
	}
	fmt.Println("\nhealth read:")
	if err := health.WriteTable(os.Stdout); err != nil {
		return err
	}

	// Discarding the investigated poison message makes v2's verdict clean too.
	if _, err := groupV2.Discard(ctx, dead[0].ID); err != nil {
		return err
	}
	health, err = client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	if err != nil {
		return err
	}
	fmt.Println("\nafter discarding the dead letter:")
	return health.WriteTable(os.Stdout)
}
