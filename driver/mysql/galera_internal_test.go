package mysql

import (
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestIDStepOnGalera: a Galera node's new ids are always read back, since
// wsrep_auto_increment_control changes auto_increment_increment when the
// cluster's size changes; elsewhere a step from lock mode 0 or 1 is kept.
func TestIDStepOnGalera(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		galera         bool
		lockMode, incr int64
		want           int64
	}{
		{false, 1, 1, 1},
		{false, 1, 3, 3},
		{false, 2, 3, 0},
		{true, 1, 3, 0},
		{true, 0, 1, 0},
		{true, 2, 3, 0},
	} {
		d := &Driver{}
		d.gal.on.Store(tc.galera)
		d.setServer(true, tc.lockMode, tc.incr)
		if got := d.autoincStep.Load(); got != tc.want {
			t.Errorf("galera %v, lock mode %d, increment %d: step %d, want %d (0 = read ids back)", tc.galera, tc.lockMode, tc.incr, got, tc.want)
		}
	}
}

// An append whose id another Galera node took is known by its error code
// and by coming from the log's insert, whatever words the server uses for
// the key (MySQL 8 names it 'message_log_3.PRIMARY', MariaDB 'PRIMARY'):
// it is retried. Not on Galera, or from another statement, it is not.
func TestGaleraIDTaken(t *testing.T) {
	t.Parallel()
	dup := func(key string) error {
		return &gomysql.MySQLError{Number: errDupEntry, Message: "Duplicate entry '7' for key '" + key + "'"}
	}
	for _, tc := range []struct {
		name   string
		galera bool
		err    error
		want   bool
	}{
		{"MariaDB's words", true, &logInsertError{stream: 3, err: dup("PRIMARY")}, true},
		{"MySQL 8's words", true, &logInsertError{stream: 3, err: dup("message_log_3.PRIMARY")}, true},
		{"wrapped again", true, fmt.Errorf("produce: %w", &logInsertError{stream: 3, err: dup("PRIMARY")}), true},
		{"not on Galera", false, &logInsertError{stream: 3, err: dup("PRIMARY")}, false},
		{"another statement's duplicate", true, fmt.Errorf("register: %w", dup("PRIMARY")), false},
		{"another error of the insert", true, &logInsertError{stream: 3, err: &gomysql.MySQLError{Number: errDeadlock}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &Driver{}
			d.gal.on.Store(tc.galera)
			if got := d.galeraIDTaken(tc.err); got != tc.want {
				t.Errorf("galeraIDTaken(%v) = %v; want %v", tc.err, got, tc.want)
			}
		})
	}
}
