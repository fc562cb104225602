package sqlstreams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// TestHeartbeatOptions: a negative interval is refused; a driver that keeps
// no client records answers Members with ErrUnsupported, and Describe still
// works on it.
func TestHeartbeatOptions(t *testing.T) {
	t.Parallel()
	if _, err := sqlstreams.Open(context.Background(), memdriver.Open(), sqlstreams.WithHeartbeatInterval(-time.Second)); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Fatalf("Open with a negative heartbeat interval: %v; want ErrInvalidOption", err)
	}
	c, err := sqlstreams.Open(context.Background(), memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Members(context.Background()); !errors.Is(err, sqlstreams.ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Members on the memory driver: %v; want ErrUnsupported", err)
	}
	if _, err := c.Stream[OrderPlacedV1]("s").Consumer("g").Register(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	d, err := c.Stream[OrderPlacedV1]("s").Group("g").Describe(context.Background())
	if err != nil || len(d.Members) != 0 {
		t.Errorf("Describe: %+v, %v; want no members and no error", d.Members, err)
	}
}
