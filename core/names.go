package sqlstreams

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLength is the longest stream or group name, in bytes.
const MaxNameLength = 128

// NamePattern describes valid stream and group names: ASCII letters and
// digits, then letters, digits, '.', '_' or '-'. Names never enter SQL text
// (tables are named by numeric id), but a strict pattern keeps names safe to
// print, to use in metrics labels and to type on a command line.
const NamePattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`

// MaxKeyLength is the longest message key and routing key, in bytes.
const MaxKeyLength = 255

func validateName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s name is empty; use a name matching %s", ErrInvalidName, kind, NamePattern)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: %s name is %d bytes; the limit is %d (pattern %s)", ErrInvalidName, kind, len(name), MaxNameLength, NamePattern)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := isWordByte(c) || (i > 0 && c == '.')
		if !ok || (i == 0 && (c == '_' || c == '-')) {
			return fmt.Errorf("%w: %s name %q has %q at byte %d; use a name matching %s", ErrInvalidName, kind, name, c, i, NamePattern)
		}
	}
	return nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// validateRoutingKey accepts "" or dot-separated words of letters, digits,
// '_' and '-'.
func validateRoutingKey(key string) error {
	if key == "" {
		return nil
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: routing key is %d bytes; the limit is %d", ErrInvalidName, len(key), MaxKeyLength)
	}
	// One pass without splitting: it runs for every message produced.
	word := 0 // bytes in the current word
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '.' {
			if word == 0 {
				break
			}
			word = 0
			continue
		}
		if !isWordByte(c) {
			return fmt.Errorf("%w: routing key %q has %q; words use letters, digits, '_' and '-'", ErrInvalidName, key, c)
		}
		word++
	}
	if word == 0 {
		return fmt.Errorf("%w: routing key %q has an empty word; write dot-separated words like \"eu.web\"", ErrInvalidName, key)
	}
	return nil
}

func validateKey(key string) error {
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: key is %d bytes; the limit is %d", ErrInvalidMessage, len(key), MaxKeyLength)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidMessage, key)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: key %q contains a NUL byte, which not every database stores; remove it", ErrInvalidMessage, key)
	}
	return nil
}
