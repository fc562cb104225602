package driver_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestAppendPartitions: the distinct partitions rows write, ascending, or an
// ErrDatabase naming the first row's partition out of range.
func TestAppendPartitions(t *testing.T) {
	t.Parallel()
	stream := driver.StreamConfig{ID: 7, Partitions: 4}
	for _, tc := range []struct {
		parts []int
		want  []int
		err   string
	}{
		{parts: []int{2}, want: []int{2}},
		{parts: []int{3, 0, 3, 1, 0}, want: []int{0, 1, 3}},
		{parts: []int{1, 4, -1}, err: "append to stream 7: partition 4 out of range 0..3"},
		{parts: []int{-1}, err: "append to stream 7: partition -1 out of range 0..3"},
	} {
		rows := make([]driver.AppendRow, len(tc.parts))
		for i, p := range tc.parts {
			rows[i].Partition = p
		}
		got, err := driver.AppendPartitions[int](stream, rows)
		got32, err32 := driver.AppendPartitions[int32](stream, rows)
		if tc.err != "" {
			var de *driver.Error
			if !errors.As(err, &de) || de.Kind != driver.ErrDatabase || de.Err.Error() != tc.err || err32 == nil {
				t.Errorf("%v: %v; want an ErrDatabase %q", tc.parts, err, tc.err)
			}
			continue
		}
		if err != nil || err32 != nil || !slices.Equal(got, tc.want) || len(got32) != len(tc.want) || int(got32[len(got32)-1]) != tc.want[len(tc.want)-1] {
			t.Errorf("%v: %v, %v, %v; want %v", tc.parts, got, got32, err, tc.want)
		}
	}
}

// BenchmarkAppendPartitions: one allocation per append.
func BenchmarkAppendPartitions(b *testing.B) {
	stream := driver.StreamConfig{ID: 1, Partitions: 8}
	for _, n := range []int{1, 100} {
		rows := make([]driver.AppendRow, n)
		for i := range rows {
			rows[i].Partition = i % 4
		}
		b.Run(map[int]string{1: "1row", 100: "100rows"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := driver.AppendPartitions[int](stream, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
