package mysql

import (
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

// TestClassifyServer runs the engine detection of Migrate against version
// strings captured from each engine (drivertest.CheckEngines): MySQL,
// MariaDB and MariaDB Galera are accepted; TiDB and Vitess are refused with
// ErrUnsupportedServer naming the missing capabilities, as an ErrDatabase
// with the engine's advice.
func TestClassifyServer(t *testing.T) {
	t.Parallel()
	drivertest.CheckEngines(t, engines.Of, func(version string) error {
		_, err := supported(version)
		if err != nil {
			err = serverError(err)
		}
		return err
	}, ErrUnsupportedServer, []drivertest.EngineCase{
		{Version: "8.0.36", Engine: "MySQL or MariaDB"},
		{Version: "8.4.3-commercial", Engine: "MySQL or MariaDB"},
		{Version: "10.11.19-MariaDB-0+deb12u1", Engine: "MySQL or MariaDB"},
		{Version: "10.11.19-MariaDB-0+deb12u1-log", Engine: "MySQL or MariaDB"}, // a Galera node with the binlog on
		{Version: "11.4.2-MariaDB-ubu2404", Engine: "MySQL or MariaDB"},
		{Version: "8.0.11-TiDB-v7.5.1", Engine: "TiDB", Missing: []string{"SKIP LOCKED", "AUTO_INCREMENT in commit order"}, Advice: "use MySQL or MariaDB"},
		{Version: "5.7.25-TiDB-v6.5.0", Engine: "TiDB", Missing: []string{"SKIP LOCKED"}, Advice: "use MySQL or MariaDB"},
		{Version: "8.0.30-Vitess", Engine: "Vitess (vtgate)", Missing: []string{"AUTO_INCREMENT in commit order across shards", "GET_LOCK"}, Advice: "unsharded keyspace directly"},
		{Version: "5.7.9-vitess-17.0.0", Engine: "Vitess (vtgate)", Missing: []string{"Vitess sequence"}, Advice: "not through vtgate"},
	})
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
