package skeleton_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance/skeleton"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// The skeleton fails honestly: opening a client on it fails with a
// sentinel and names the first method to write. (Running the conformance
// suite against it fails every test the same way.)
func TestSkeletonFailsHonestly(t *testing.T) {
	_, err := sqlstreams.Open(context.Background(), &skeleton.Driver{})
	if !errors.Is(err, sqlstreams.ErrDatabase) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Open on the skeleton: %v; want ErrDatabase naming an unsupported method", err)
	}
	t.Log(err)
}
