package sqldb

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestRetentionRemove: the rows go first, told which groups' counts follow,
// then the counts in group name order, so that every engine locks the
// groups in one order.
func TestRetentionRemove(t *testing.T) {
	t.Parallel()
	q := &execLog{}
	r := Retention{R: On(q), Delete: func(_ context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, groups []string) error {
		q.ran = append(q.ran, fmt.Sprint("DELETE", stream.ID, len(victims), groups))
		return nil
	}}
	err := r.Remove(context.Background(), driver.StreamConfig{ID: 7}, make([]driver.RetainCandidate, 3), map[string]int64{"b": 2, "a": 1})
	if err != nil {
		t.Fatal(err)
	}
	const update = `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`
	if want := []string{"DELETE7 3 [a b]", update + "[1 7 a]", update + "[2 7 b]"}; !slices.Equal(q.ran, want) {
		t.Fatalf("ran %q, want %q", q.ran, want)
	}
}
