package sqlstreams

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestSeekTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	// Rows with ids 10, 20, ..., 1000 produced a second apart; ids between
	// them are gaps (other partitions, rolled-back appends).
	var rows []driver.Row
	for i := 1; i <= 100; i++ {
		rows = append(rows, driver.Row{ID: int64(10 * i), ProducedAt: base.Add(time.Duration(i) * time.Second)})
	}
	reads := 0
	first := func(after int64) (*driver.Row, error) {
		reads++
		for i := range rows {
			if rows[i].ID > after {
				return &rows[i], nil
			}
		}
		return nil, nil
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{base, 0},                           // before everything: read from the start
		{base.Add(time.Second), 0},          // exactly the first row
		{base.Add(50 * time.Second), 490},   // row 500 is next
		{base.Add(50*time.Second + 1), 500}, // between rows: row 510 is next
		{base.Add(time.Hour), 1000},         // after everything: at the high-water mark
	} {
		reads = 0
		got, err := seekTime(1000, tc.at, first)
		if err != nil || got != tc.want {
			t.Errorf("seekTime(%v) = %d, %v; want %d", tc.at.Sub(base), got, err, tc.want)
		}
		if reads > 12 {
			t.Errorf("seekTime(%v) read %d rows; want about log2(1000)", tc.at.Sub(base), reads)
		}
	}
}
