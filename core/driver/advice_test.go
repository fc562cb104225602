package driver_test

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestAppendLockHeld names the partitions waited for.
func TestAppendLockHeld(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{driver.AppendLockHeld([]int{}), "the append lock of the partitions of this stream"},
		{driver.AppendLockHeld([]int32{3}), "the append lock of partition 3 of this stream"},
		{driver.AppendLockHeld([]int{0, 1}), "the append lock of one of partitions 0, 1 of this stream"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("AppendLockHeld = %q, want it to contain %q", tc.got, tc.want)
		}
	}
}
