package postgres_test

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestRegisterGroupLosesInsert: a registration whose insert of a new group
// meets another registration's uncommitted row waits for it and, once the
// other commits, returns the group the other wrote (the engine refuses the
// loser's insert as a duplicate; sqldb.Store.RegisterGroupIn runs it again,
// and the next attempt finds the row).
func TestRegisterGroupLosesInsert(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	winner, err := f.drv.Pool().Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = winner.Rollback(tctx(t)) })
	if _, err := winner.Exec(tctx(t), `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
		VALUES ($1, 'g', 7, false, '[]', '[]', 0, $2)`, f.stream.ID, f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := winner.Exec(tctx(t), `INSERT INTO group_cursor (stream_id, group_name, partition, position) SELECT $1, 'g', p, 0 FROM generate_series(0, 1) p`, f.stream.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   driver.GroupConfig
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := f.drv.RegisterGroup(tctx(t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: f.stream.ID, Name: "g", SchemaVersion: 1, CreatedAt: f.now}})
		done <- result{g, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE 'INSERT INTO consumer_group%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registration never waited for the other's insert")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := winner.Commit(tctx(t)); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("registration that lost the insert: %v; want the winner's group", r.err)
	}
	if r.g.SchemaVersion != 7 {
		t.Errorf("registration that lost the insert returned version %d; want the winner's 7", r.g.SchemaVersion)
	}
	var cursors int
	if err := f.drv.Pool().QueryRow(tctx(t), `SELECT count(*) FROM group_cursor WHERE stream_id = $1 AND group_name = 'g'`, f.stream.ID).Scan(&cursors); err != nil {
		t.Fatal(err)
	}
	if cursors != 2 {
		t.Errorf("the group has %d cursors; want 2", cursors)
	}
}
