package mysql

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// A stream's reader reads its marks a few times per poll interval of the
// subscriber that polls most often (core/driver's Subscribers pick it, and
// the reader; TestSubscribersShare), within bounds, and at core's default
// interval for a subscriber that gave none.
func TestWatchPeriod(t *testing.T) {
	t.Parallel()
	var ws watches
	a, _ := ws.Join(7, driverParams(40*time.Millisecond))
	b, _ := ws.Join(7, driverParams(time.Hour))
	if got := watchPeriod(ws.Poll(7, defaultWatchPoll)); got != 10*time.Millisecond {
		t.Errorf("period %v, want a quarter of the shortest poll, 10ms", got)
	}
	ws.Leave(7, a)
	if got := watchPeriod(ws.Poll(7, defaultWatchPoll)); got != maxWatchPeriod {
		t.Errorf("period %v for an hour's poll, want the bound %v", got, maxWatchPeriod)
	}
	ws.Leave(7, b)
	ws.Join(7, driverParams(0))
	if got := watchPeriod(ws.Poll(7, defaultWatchPoll)); got != defaultWatchPoll/watchesPerPoll {
		t.Errorf("period %v without a poll interval, want %v", got, defaultWatchPoll/watchesPerPoll)
	}
	if got := watchPeriod(time.Microsecond); got != minWatchPeriod {
		t.Errorf("period %v for a microsecond's poll, want the bound %v", got, minWatchPeriod)
	}
}

func driverParams(poll time.Duration) driver.SubscribeParams {
	return driver.SubscribeParams{StreamID: 7, PollInterval: poll, Wake: func() {}}
}
