package driver

import (
	"strconv"
	"strings"
)

// AppendLockHeld is the advice for a wait for the append lock of parts
// (every partition of the stream when empty) that timed out: who probably
// holds it, and what to do. Each engine adds what its caller does next.
func AppendLockHeld[P ~int | ~int32](parts []P) string {
	which := "the partitions"
	switch {
	case len(parts) == 1:
		which = "partition " + strconv.Itoa(int(parts[0]))
	case len(parts) > 1:
		s := make([]string, len(parts))
		for i, p := range parts {
			s[i] = strconv.Itoa(int(p))
		}
		which = "one of partitions " + strings.Join(s, ", ")
	}
	return "another transaction holds the append lock of " + which + " of this stream, probably an open ProduceTx; commit it promptly"
}
