package driver

import (
	"fmt"
	"math/bits"
)

// AppendPartitions checks that every row goes to one of the stream's
// partitions and returns the partitions the rows write, distinct and
// ascending: the append locks an append takes, in the order it takes them.
// It marks them in a bit set (on the stack up to 1024 partitions, core's
// MaxPartitions), so the one allocation holds just the partitions written.
func AppendPartitions[P ~int | ~int32](stream StreamConfig, rows []AppendRow) ([]P, error) {
	var stack [16]uint64
	set := stack[:]
	if w := (stream.Partitions + 63) / 64; w > len(set) {
		set = make([]uint64, w)
	}
	n := 0
	for _, r := range rows {
		p := r.Partition
		if p < 0 || p >= stream.Partitions {
			return nil, &Error{Kind: ErrDatabase, Err: fmt.Errorf("append to stream %d: partition %d out of range 0..%d", stream.ID, p, stream.Partitions-1)}
		}
		if bit := uint64(1) << (p % 64); set[p/64]&bit == 0 {
			set[p/64] |= bit
			n++
		}
	}
	parts := make([]P, 0, n)
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			parts = append(parts, P(w*64+bits.TrailingZeros64(word)))
		}
	}
	return parts, nil
}
