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

// matchWords matches a pattern against words. '#' is handled by trying every
// split, which is fine for the short keys routing uses.
func matchWords(pattern, words []string) bool {
	for len(pattern) > 0 {
		switch p := pattern[0]; p {
		case "#":
			for skip := 0; skip <= len(words); skip++ {
				if matchWords(pattern[1:], words[skip:]) {
					return true
				}
			}
			return false
		case "*":
			if len(words) == 0 {
				return false
			}
		default:
			if len(words) == 0 || words[0] != p {
				return false
			}
		}
		pattern, words = pattern[1:], words[1:]
	}
	return len(words) == 0
}

// matchBindings reports whether bindings select routingKey.
func matchBindings(bindings []string, routingKey string) bool {
	m := matcher(bindings)
	return m == nil || m(routingKey)
}
