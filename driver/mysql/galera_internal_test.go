package mysql

import "testing"

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
