package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestClassifyServer runs the engine detection of Migrate against version
// strings captured from each engine: MySQL, MariaDB and MariaDB Galera are
// accepted; TiDB and Vitess are refused with ErrUnsupportedServer naming the
// missing capabilities, as an ErrDatabase with the engine's advice.
func TestClassifyServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		engine  string
		missing []string // substrings of the error; nil: accepted
		advice  string
	}{
		{version: "8.0.36", engine: "MySQL or MariaDB"},
		{version: "8.4.3-commercial", engine: "MySQL or MariaDB"},
		{version: "10.11.19-MariaDB-0+deb12u1", engine: "MySQL or MariaDB"},
		{version: "10.11.19-MariaDB-0+deb12u1-log", engine: "MySQL or MariaDB"}, // a Galera node with the binlog on
		{version: "11.4.2-MariaDB-ubu2404", engine: "MySQL or MariaDB"},
		{version: "8.0.11-TiDB-v7.5.1", engine: "TiDB", missing: []string{"SKIP LOCKED", "AUTO_INCREMENT in commit order"}, advice: "use MySQL or MariaDB"},
		{version: "5.7.25-TiDB-v6.5.0", engine: "TiDB", missing: []string{"SKIP LOCKED"}, advice: "use MySQL or MariaDB"},
		{version: "8.0.30-Vitess", engine: "Vitess (vtgate)", missing: []string{"AUTO_INCREMENT in commit order across shards", "GET_LOCK"}, advice: "unsharded keyspace directly"},
		{version: "5.7.9-vitess-17.0.0", engine: "Vitess (vtgate)", missing: []string{"Vitess sequence"}, advice: "not through vtgate"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			if got := classifyServer(tt.version).name; got != tt.engine {
				t.Errorf("engine %q; want %q", got, tt.engine)
			}
			_, err := supported(tt.version)
			if tt.missing == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupportedServer) {
				t.Fatalf("supported(%q) = %v; want ErrUnsupportedServer", tt.version, err)
			}
			for _, m := range tt.missing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
			werr := serverError(err)
			var de *driver.Error
			if !errors.Is(werr, driver.ErrDatabase) || !errors.Is(werr, ErrUnsupportedServer) || !errors.As(werr, &de) {
				t.Fatalf("Migrate's error %v is not an ErrDatabase with ErrUnsupportedServer", werr)
			}
			if !strings.Contains(de.Advice, tt.advice) {
				t.Errorf("advice %q; want it to say %q", de.Advice, tt.advice)
			}
		})
	}
}

// TestOldServersStillSayUpgrade: the version check of old servers keeps its
// advice.
func TestOldServersStillSayUpgrade(t *testing.T) {
	t.Parallel()
	_, err := supported("10.5.4-MariaDB")
	var de *driver.Error
	if err == nil || errors.Is(err, ErrUnsupportedServer) || !errors.As(serverError(err), &de) || de.Advice != "upgrade the server" {
		t.Fatalf("MariaDB 10.5: %v; want a refusal that says to upgrade", err)
	}
}

// TestDSNSetsParam: a DSN that sets wsrep_sync_wait itself keeps it.
func TestDSNSetsParam(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		params map[string]string
		want   bool
	}{
		{map[string]string{"wsrep_sync_wait": "3"}, true},
		{map[string]string{"WSREP_SYNC_WAIT": "0"}, true},
		{map[string]string{"time_zone": "'+00:00'"}, false},
		{nil, false},
	} {
		if got := dsnSetsParam(tt.params, "wsrep_sync_wait"); got != tt.want {
			t.Errorf("dsnSetsParam(%v) = %v; want %v", tt.params, got, tt.want)
		}
	}
}
