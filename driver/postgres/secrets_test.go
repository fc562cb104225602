package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// No password from the connection string appears in an error or a log line:
// not when the string does not parse (pgx's own error quotes it), not when
// nothing listens, not when the server refuses the password, also when the
// server echoes it back.
func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-PW_9x"
	fake := fakeAuthServer(t)
	cases := []struct {
		name, url string
		secrets   []string // every spelling that must not appear
	}{
		{"URL with a bad host escape", "postgres://app:" + secret + "@%zz/test", nil},
		{"URL with a bad port", "postgres://app:" + secret + "@127.0.0.1:notaport/test", nil},
		{"URL with an unclosed IPv6 host", "postgresql://app:" + secret + "@[::1/test", nil},
		{"URL with a percent-encoded password", "postgres://app:s3cret%2DPW_9x@127.0.0.1:notaport/test", []string{"s3cret%2DPW_9x"}},
		{"URL with a bad escape in the password", "postgres://app:" + secret + "%zz@127.0.0.1/test", []string{secret + "%zz"}},
		{"URL with the password in the query", "postgres://app@127.0.0.1/test?password=" + secret + "&sslmode=bogus", nil},
		{"URL with a slash in the password", "postgres://app:" + secret + "/x@127.0.0.1:notaport/test", []string{secret + "/x"}},
		{"key=value with a bad port", "host=127.0.0.1 port=notaport user=app password=" + secret + " dbname=test", nil},
		{"key=value with a quoted password", "host=127.0.0.1 password='" + secret + " two' sslmode=bogus", []string{secret + " two"}},
		{"key=value unterminated", "host=127.0.0.1 password=" + secret + " dbname='test", nil},
		{"refused port, URL", "postgres://app:" + secret + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", nil},
		{"refused port, key=value", "host=127.0.0.1 port=1 user=app password=" + secret + " dbname=test sslmode=disable connect_timeout=5", nil},
		{"wrong password, echoed by the server", "postgres://app:" + secret + "@" + fake + "/test?sslmode=disable&connect_timeout=5", nil},
		{"wrong password, key=value", "host=" + strings.Split(fake, ":")[0] + " port=" + strings.Split(fake, ":")[1] +
			" user=app password=" + secret + " dbname=test sslmode=disable connect_timeout=5", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			var mu sync.Mutex
			logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			drv := postgres.Open(tc.url)
			c, err := sqlstreams.Open(ctx, drv, sqlstreams.WithLogger(logger), sqlstreams.WithMaintenanceInterval(0))
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			t.Log(err)
			if !errors.Is(err, sqlstreams.ErrUnavailable) {
				t.Errorf("Open: %v; want ErrUnavailable", err)
			}
			// The driver's own calls fail alike.
			derr := drv.Migrate(ctx)
			mu.Lock()
			texts := []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprint(derr), logs.String()}
			mu.Unlock()
			for _, s := range append([]string{secret}, tc.secrets...) {
				for _, text := range texts {
					if strings.Contains(text, s) {
						t.Errorf("the password %q appears in %q", s, text)
					}
				}
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// fakeAuthServer speaks just enough of the protocol to ask for a cleartext
// password and refuse it with an error quoting it, as a hostile or careless
// server might. It returns host:port.
func fakeAuthServer(t *testing.T) string {
	t.Helper()
	return drivertest.Serve(t, func(conn net.Conn) {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		be := pgproto3.NewBackend(conn, conn)
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		if _, ok := msg.(*pgproto3.StartupMessage); !ok {
			return
		}
		be.Send(&pgproto3.AuthenticationCleartextPassword{})
		if err := be.Flush(); err != nil {
			return
		}
		if err := be.SetAuthType(pgproto3.AuthTypeCleartextPassword); err != nil {
			return
		}
		got, err := be.Receive()
		if err != nil {
			return
		}
		pw := ""
		if m, ok := got.(*pgproto3.PasswordMessage); ok {
			pw = m.Password
		}
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01",
			Message: fmt.Sprintf("password authentication failed for user \"app\" (password %q)", pw)})
		_ = be.Flush()
	})
}

// With a password that is also a word of every error ("postgres", the usual
// development password), errors keep their text, their engine error and so
// their advice: the lock-timeout tests run again, in a process of their own,
// with the server's URL given that password (the test server accepts any).
func TestCommonWordPassword(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(baseURL())
	if err != nil {
		t.Fatal(err)
	}
	user := "postgres"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^(TestLockTimeout|TestSettleInCallerTx)$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SQLSTREAMS_POSTGRES_URL="+u.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestLockTimeout and TestSettleInCallerTx with the password %q: %v\n%s", "postgres", err, out)
	}
	if !strings.Contains(string(out), "PASS") || strings.Contains(string(out), "no tests to run") {
		t.Fatalf("the tests did not run:\n%s", out)
	}
}
