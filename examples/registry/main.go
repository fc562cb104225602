// Command registry shows the schema registry keeping a version honest: a
// struct edited without bumping SchemaVersion() is refused at Register with
// every problem listed, and the same shape is accepted as a new version.
//
//	go run ./registry     (from the examples directory)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlacedV2 is deployed: producers write it and fraud-scoring-v2 reads it.
type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

// OrderPlacedV2Edited is what happens when someone edits the struct in place:
// Total became a plain number and a required Channel appeared, but the
// version stayed 2. Readers of version 2 would misread every new row.
type OrderPlacedV2Edited struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
	Channel string `json:"channel"`
}

func (OrderPlacedV2Edited) SchemaVersion() int { return 2 }

// OrderPlacedV3 is the same edit done right: a new version, read by a new group.
type OrderPlacedV3 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
	Channel string `json:"channel"`
}

func (OrderPlacedV3) SchemaVersion() int { return 3 }

// OrderPlacedV2Plus evolves version 2 compatibly: the new member has a
// default, so rows written without it read as "web".
type OrderPlacedV2Plus struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
	Channel string `json:"channel" sqlstreams:"default=\"web\""`
}

func (OrderPlacedV2Plus) SchemaVersion() int { return 2 }

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-registry-")
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

	const stream = "orders.placed"
	v2, err := client.Stream[OrderPlacedV2](stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := client.Stream[OrderPlacedV2](stream).Consumer("fraud-scoring-v2").Register(ctx, nil); err != nil {
		return err
	}
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "A-1", Total: Money{Cents: 1999, Currency: "EUR"}}); err != nil {
		return err
	}
	level, err := client.Registry().Level(ctx, stream)
	if err != nil {
		return err
	}
	fmt.Printf("level for %s: %s (from the %s)\n", stream, level.Value, level.Scope)

	// The dry run a CI job would call: it records nothing.
	if err := client.Stream[OrderPlacedV2Edited](stream).CheckSchema(ctx); err != nil {
		fmt.Printf("\ndry run of the edited struct: refused, as Register would be\n")
	}

	// The edited struct is refused at Register, before it writes a row.
	_, err = client.Stream[OrderPlacedV2Edited](stream).Producer().Register(ctx, nil)
	var incompatible *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &incompatible) {
		return fmt.Errorf("expected the edited struct to be refused, got %v", err)
	}
	fmt.Printf("\nRegister(OrderPlacedV2Edited) refused:\n%v\n", err)

	// A compatible evolution within version 2 is accepted as revision 2.
	if _, err := client.Stream[OrderPlacedV2Plus](stream).Producer().Register(ctx, nil); err != nil {
		return err
	}
	// The same breaking shape as version 3 is accepted: a new version is a
	// new compatibility boundary, read by its own group.
	v3, err := client.Stream[OrderPlacedV3](stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := client.Stream[OrderPlacedV3](stream).Consumer("fraud-scoring-v3").Register(ctx, nil); err != nil {
		return err
	}
	if _, err := v3.Produce(ctx, OrderPlacedV3{OrderID: "A-2", Total: 2599, Channel: "app"}); err != nil {
		return err
	}
	revs, err := client.Registry().Revisions(ctx, stream, 0)
	if err != nil {
		return err
	}
	fmt.Println("\nrecorded revisions:")
	for _, r := range revs {
		fmt.Printf("  v%d revision %d  %s…\n", r.Version, r.Revision, r.Fingerprint[:12])
	}
	readers, err := client.Registry().Readers(ctx, stream)
	if err != nil {
		return err
	}
	fmt.Println("registered readers:")
	for _, r := range readers {
		fmt.Printf("  %-17s v%d revision %d\n", r.Group, r.Version, r.Revision)
	}
	return nil
}
