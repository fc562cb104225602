package scaleout_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
)

// testGaleraMigrate proves the migration lock holds across nodes: members
// starting at once through every node (a rolling deploy) all migrate one
// database, a lock held through one node keeps a Migrate through another
// waiting, and a dead holder's expired lock is taken over.
func testGaleraMigrate(t *testing.T, g *servers.Galera) {
	ctx := context.Background()
	t.Run("MembersStartingAtOnce", func(t *testing.T) {
		dsns := galeraDatabase(t, g)
		var wg sync.WaitGroup
		errs := make(chan error, 3*len(dsns))
		start := make(chan struct{})
		for i := range 3 * len(dsns) {
			wg.Go(func() {
				d := mysql.Open(dsns[i%len(dsns)])
				defer d.Close()
				<-start
				mctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				if err := d.Migrate(mctx); err != nil {
					errs <- fmt.Errorf("member %d through node %d: %w", i, i%len(dsns)+1, err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for i, dsn := range dsns {
			c, err := sqlstreams.Open(ctx, mysql.Open(dsn))
			if err != nil {
				t.Fatalf("node %d after the concurrent migrations: %v", i+1, err)
			}
			_ = c.Close()
		}
		db := dbOf(dsns[0])
		ms, err := migrateThrough(ctx, dsns[0], false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Nodes[2].Query("SELECT COUNT(*) FROM " + db + ".sqlstreams_migration")
		if err != nil || got != fmt.Sprint(len(ms)) {
			t.Errorf("node 3 records %s applied migrations (err %v), want %d, each once", got, err, len(ms))
		}
	})
	t.Run("HeldThroughAnotherNode", func(t *testing.T) {
		dsns := galeraDatabase(t, g)
		db := dbOf(dsns[0])
		if _, err := migrateThrough(ctx, dsns[0], true); err != nil {
			t.Fatal(err)
		}
		// A member migrating through node 1, as its lock row shows.
		if err := g.Nodes[0].Exec("INSERT INTO " + db + ".sqlstreams_migration_lock (name, holder, expires_at) VALUES ('migrate', 'member-on-node-1', UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)"); err != nil {
			t.Fatal(err)
		}
		d := mysql.Open(dsns[1])
		defer d.Close()
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := d.Migrate(mctx)
		if !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), "member-on-node-1") {
			t.Fatalf("Migrate through node 2 while node 1's member holds the lock: %v, want ErrConflict naming member-on-node-1", err)
		}
		// The holder died: once its row expires, the next member takes over.
		if err := g.Nodes[2].Exec("UPDATE " + db + ".sqlstreams_migration_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"); err != nil {
			t.Fatal(err)
		}
		if _, err := migrateThrough(ctx, dsns[2], true); err != nil {
			t.Fatalf("Migrate through node 3 after the dead holder's lock expired: %v", err)
		}
		if err := g.WaitDatabase(db); err != nil {
			t.Fatal(err)
		}
		if got, err := g.Nodes[0].Query("SELECT COUNT(*) FROM " + db + ".sqlstreams_migration_lock"); err != nil || got != "0" {
			t.Errorf("lock rows left after the migration: %s (err %v), want 0", got, err)
		}
	})
}

// migrateThrough opens a driver on dsn, migrates when asked, and returns
// the driver's migrations.
func migrateThrough(ctx context.Context, dsn string, migrate bool) ([]driver.Migration, error) {
	d := mysql.Open(dsn)
	defer d.Close()
	if migrate {
		if err := d.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	return d.Migrations()
}

// dbOf is the database a DSN names.
func dbOf(dsn string) string {
	db := dsn[strings.LastIndex(dsn, "/")+1:]
	if i := strings.IndexByte(db, '?'); i >= 0 {
		db = db[:i]
	}
	return db
}
