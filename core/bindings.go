package sqlstreams

import (
	"fmt"
	"strings"
)

// A binding selects routing keys with RabbitMQ topic semantics: words are
// separated by '.', '*' stands for exactly one word and '#' for zero or more
// words, so "orders.#" matches "orders", "orders.eu" and "orders.eu.web".
// A group with no bindings receives every routing key.

func validateBinding(b string) error {
	if b == "" {
		return fmt.Errorf("%w: empty binding; use words, '*' or '#' separated by dots, like \"eu.#\"", ErrInvalidName)
	}
	if len(b) > MaxKeyLength {
		return fmt.Errorf("%w: binding is %d bytes; the limit is %d", ErrInvalidName, len(b), MaxKeyLength)
	}
	for _, w := range strings.Split(b, ".") {
		if w == "*" || w == "#" {
			continue
		}
		if err := validateRoutingKey(w); err != nil || w == "" {
			return fmt.Errorf("%w: binding %q has the word %q; use words of letters, digits, '_' and '-', or '*' or '#'", ErrInvalidName, b, w)
		}
	}
	return nil
}

// matcher compiles bindings into a predicate; nil bindings match everything.
func matcher(bindings []string) func(string) bool {
	if len(bindings) == 0 {
		return nil
	}
	patterns := make([][]string, len(bindings))
	for i, b := range bindings {
		patterns[i] = strings.Split(b, ".")
	}
	return func(key string) bool {
		var words []string
		if key != "" {
			words = strings.Split(key, ".")
		}
		for _, p := range patterns {
			if matchWords(p, words) {
				return true
			}
		}
		return false
	}
}

// matchWords matches a pattern against words in O(len(pattern)*len(words))
// steps: reach[j] says whether the pattern words seen so far can match
// words[:j]. (Trying every split for each '#' instead would take
// exponential time on bindings with several '#', and the driver calls the
// matcher for every row a claim passes, inside its transaction.)
func matchWords(pattern, words []string) bool {
	reach := make([]bool, len(words)+1)
	next := make([]bool, len(words)+1)
	reach[0] = true
	for _, p := range pattern {
		switch p {
		case "#":
			seen := false
			for j := range reach {
				seen = seen || reach[j]
				next[j] = seen
			}
		default:
			next[0] = false
			for j := 1; j <= len(words); j++ {
				next[j] = reach[j-1] && (p == "*" || words[j-1] == p)
			}
		}
		reach, next = next, reach
	}
	return reach[len(words)]
}

// matchBindings reports whether bindings select routingKey.
func matchBindings(bindings []string, routingKey string) bool {
	m := matcher(bindings)
	return m == nil || m(routingKey)
}
