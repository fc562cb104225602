package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// A produce whose pooled session the server has ended (failover, restart,
// pg_terminate_backend, idle_session_timeout) is retried on a new session
// and succeeds, in both exec modes: it never fails for a statement prepared
// on the dead session, never reports ErrOutcomeUnknown for a batch the dead
// session never ran, and writes each row once. The pool has one connection
// and never pings, so every produce's first attempt meets the ended
// session: a warm one (the append's statements already prepared on it) and
// a cold one (prepared in the same round trip) in turn.
func TestAppendRetriesOnANewSession(t *testing.T) {
	for _, ending := range []struct {
		name string
		// settings are the client's session settings; end ends its
		// sessions (named app) and returns once none is left.
		settings map[string]string
		end      func(t *testing.T, admin *pgx.Conn, app string)
	}{
		{"pg_terminate_backend", nil, func(t *testing.T, admin *pgx.Conn, app string) {
			t.Helper()
			var n int
			if err := admin.QueryRow(tctx(t), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
				WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("no session to terminate")
			}
		}},
		{"idle_session_timeout", map[string]string{"idle_session_timeout": "1000"}, func(t *testing.T, admin *pgx.Conn, app string) {
			t.Helper()
			for range 1000 { // 10 s at most
				var n int
				if err := admin.QueryRow(tctx(t), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatal("the client's session did not time out within 10 s")
		}},
	} {
		t.Run(ending.name, func(t *testing.T) {
			runModes(t, execModes, func(t *testing.T, opts ...postgres.Option) {
				testAppendRetry(t, ending.settings, ending.end, opts...)
			})
		})
	}
}

func testAppendRetry(t *testing.T, settings map[string]string, end func(*testing.T, *pgx.Conn, string), opts ...postgres.Option) {
	app := randomName("sqlstreams_retry_")
	ns := withParams(t, newSchema(t, nil), map[string]string{"application_name": app})
	opts = append(opts, postgres.WithPoolConfig(func(c *pgxpool.Config) {
		maps.Copy(c.ConnConfig.RuntimeParams, settings)
		c.MaxConns = 1
		c.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	}))
	c := open(t, ns, opts...)
	pool := c.Driver().(*postgres.Driver).Pool()
	admin := admin(t)
	p, err := c.Stream[event]("retry").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	const produces = 10
	ok := 0
	for i := range produces {
		if i%2 == 1 {
			// A cold session: a new connection that has prepared nothing.
			pool.Reset()
			if _, err := pool.Exec(tctx(t), `SELECT 1`); err != nil {
				t.Fatal(err)
			}
		}
		end(t, admin, app)
		if _, err := p.Produce(tctx(t), event{N: i}); err != nil {
			t.Errorf("produce %d after its session ended: %v", i, err)
			if errors.Is(err, sqlstreams.ErrOutcomeUnknown) {
				t.Errorf("produce %d: ErrOutcomeUnknown, but the terminated session ran nothing", i)
			}
			continue
		}
		ok++
	}
	if ok != produces {
		t.Errorf("%d of %d produces succeeded after a terminated session", ok, produces)
	}
	cfg, err := c.Stream[event]("retry").Get(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(ns)
	if err != nil {
		t.Fatal(err)
	}
	// The admin connection: the client's session may have ended again.
	rows, err := admin.Query(tctx(t), fmt.Sprintf(`SELECT payload FROM %s.message_log_%d`, u.Query().Get("search_path"), cfg.ID))
	if err != nil {
		t.Fatal(err)
	}
	written := map[int]int{}
	for rows.Next() {
		var payload []byte
		var e event
		if err := rows.Scan(&payload); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(payload, &e); err != nil {
			t.Fatal(err)
		}
		written[e.N]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range produces {
		if written[i] != 1 {
			t.Errorf("produce %d wrote %d rows; want exactly 1", i, written[i])
		}
	}
	if len(written) != produces {
		t.Errorf("the log holds rows of %d produces; want %d", len(written), produces)
	}
}
