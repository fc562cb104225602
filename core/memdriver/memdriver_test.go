package memdriver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

type otherTx struct{}

func (otherTx) DriverName() string { return "other" }

// Every way a call can be refused gives a sentinel errors.Is matches, and
// writes nothing.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	cfg := driver.StreamConfig{Name: "s", Partitions: 1}
	tests := []struct {
		name string
		call func(t *testing.T) error
		want error
	}{
		{"bad busy timeout", func(t *testing.T) error {
			return Open(WithBusyTimeout(0)).Migrate(ctx)
		}, driver.ErrUnavailable},
		{"closed driver", func(t *testing.T) error {
			d := Open()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: cfg})
			return err
		}, driver.ErrClosed},
		{"closed twice", func(t *testing.T) error {
			d := Open()
			_ = d.Close()
			return d.Close()
		}, driver.ErrClosed},
		{"closed store", func(t *testing.T) error {
			d := Open()
			d.Store().Close()
			_, err := d.ListStreams(ctx, driver.ListStreamsParams{})
			return err
		}, driver.ErrUnavailable},
		{"ended context", func(t *testing.T) error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			_, err := Open().CreateStream(c, driver.CreateStreamParams{Config: cfg})
			return err
		}, context.Canceled},
		{"another driver's transaction", func(t *testing.T) error {
			_, err := Open().Append(ctx, driver.AppendParams{Stream: cfg, Tx: otherTx{}})
			return err
		}, driver.ErrForeignTx},
		{"another store's transaction", func(t *testing.T) error {
			tx, err := Begin(ctx, Open())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			_, err = Open().Append(ctx, driver.AppendParams{Stream: cfg, Tx: tx})
			return err
		}, driver.ErrForeignTx},
		{"write in an ended transaction", func(t *testing.T) error {
			d := Open()
			tx, err := Begin(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			_ = tx.Commit()
			_, err = d.Append(ctx, driver.AppendParams{Stream: cfg, Tx: tx})
			return err
		}, ErrTxDone},
		{"writer held", func(t *testing.T) error {
			d := Open(WithBusyTimeout(20 * time.Millisecond))
			tx, err := Begin(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			_, err = d.CreateStream(ctx, driver.CreateStreamParams{Config: cfg})
			return err
		}, driver.ErrConflict},
		{"transaction whose context ended", func(t *testing.T) error {
			d := Open() // the write below waits for the rollback, for up to BusyTimeout
			c, cancel := context.WithCancel(ctx)
			tx, err := Begin(c, d)
			if err != nil {
				t.Fatal(err)
			}
			cancel() // rolls the transaction back and frees the writer
			if _, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: cfg}); err != nil {
				t.Fatalf("a write after the transaction's context ended: %v", err)
			}
			return tx.Commit()
		}, ErrTxDone},
		{"no migration", func(t *testing.T) error {
			return Open().ApplyMigration(ctx, driver.ApplyMigrationParams{Version: 1})
		}, driver.ErrDatabase},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(t); !errors.Is(err, tc.want) {
				t.Errorf("got %v; want %v", err, tc.want)
			}
		})
	}
}

// A caller transaction's writes are seen by nobody until Commit, a Rollback
// drops them (compaction heads included), and OnCommit runs only at Commit.
func TestTxIsolation(t *testing.T) {
	ctx := context.Background()
	d := Open()
	cfg, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "s", Partitions: 1, Compacted: true}})
	if err != nil {
		t.Fatal(err)
	}
	row := func(rank int64) []driver.AppendRow {
		return []driver.AppendRow{{SchemaVersion: 1, Key: "k", HasKey: true, CompactionRank: rank, Payload: []byte(`{}`)}}
	}
	if _, err := d.Append(ctx, driver.AppendParams{Stream: cfg, Rows: row(0)}); err != nil {
		t.Fatal(err)
	}
	heads := func() (rows, heads int64, high int64) {
		t.Helper()
		st, err := d.Health(ctx, driver.HealthParams{StreamID: cfg.ID, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return st.Versions[0].Rows, st.Versions[0].Heads, st.HighWater[0]
	}
	for _, commit := range []bool{false, true} {
		tx, err := Begin(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		if err := tx.OnCommit(func() { ran = true }); err != nil {
			t.Fatal(err)
		}
		ids, err := d.Append(ctx, driver.AppendParams{Stream: cfg, Tx: tx, Rows: row(5)})
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, high := heads(); rows != 1 || high != 1 {
			t.Errorf("commit=%v: an open transaction's row is visible: %d rows, high-water %d", commit, rows, high)
		}
		end := tx.Rollback
		if commit {
			end = tx.Commit
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
		rows, hs, high := heads()
		switch {
		case ran != commit:
			t.Errorf("commit=%v: OnCommit ran %v", commit, ran)
		case !commit && (rows != 1 || hs != 1 || high != 1):
			t.Errorf("after a rollback: %d rows, %d heads, high-water %d; want the first row alone", rows, hs, high)
		case commit && (rows != 2 || hs != 1 || high != ids[0] || ids[0] != 2):
			t.Errorf("after a commit: %d rows, %d heads, high-water %d, id %d; want 2 rows, one head, id 2 (the rolled-back id is given back)", rows, hs, high, ids[0])
		}
	}
}
