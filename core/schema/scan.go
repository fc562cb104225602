package schema

import (
	"fmt"
	"unicode/utf8"
)

// scanJSON checks that data is exactly one JSON value (RFC 8259) and
// returns the offset of the first offending byte with a description.
// encoding/json reports syntax error offsets differently depending on
// whether GOEXPERIMENT=jsonv2 is on, so Parse locates errors itself.
func scanJSON(data []byte) (int, string, bool) {
	s := &scanner{data: data}
	s.space()
	if s.pos == len(data) {
		return 0, "empty input; expected a JSON object or a boolean", false
	}
	if !s.value(0) {
		return s.pos, s.msg, false
	}
	s.space()
	if s.pos != len(data) {
		return s.pos, fmt.Sprintf("unexpected %s after the end of the schema; a document holds exactly one schema", s.show()), false
	}
	return 0, "", true
}

type scanner struct {
	data []byte
	pos  int
	msg  string
}

const maxNesting = 10000

func (s *scanner) fail(format string, args ...any) bool {
	s.msg = fmt.Sprintf(format, args...)
	return false
}

func (s *scanner) show() string {
	if s.pos >= len(s.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(s.data[s.pos:])
	return fmt.Sprintf("character %q", r)
}

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) bool {
	if depth > maxNesting {
		return s.fail("nesting deeper than %d levels", maxNesting)
	}
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of input; the JSON is truncated")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		return s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.fail("unexpected %s; expected a JSON value", s.show())
}

func (s *scanner) object(depth int) bool {
	s.pos++ // {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return true
	}
	for {
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input; the JSON is truncated")
		}
		if s.data[s.pos] != '"' {
			return s.fail("unexpected %s; expected a quoted object key", s.show())
		}
		if !s.str() {
			return false
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input; the JSON is truncated")
		}
		if s.data[s.pos] != ':' {
			return s.fail("unexpected %s; expected ':' after an object key", s.show())
		}
		s.pos++
		s.space()
		if !s.value(depth + 1) {
			return false
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input; the JSON is truncated")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			return s.fail("unexpected %s; expected ',' or '}'", s.show())
		}
	}
}

func (s *scanner) array(depth int) bool {
	s.pos++ // [
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return true
	}
	for {
		s.space()
		if !s.value(depth + 1) {
			return false
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input; the JSON is truncated")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			return s.fail("unexpected %s; expected ',' or ']'", s.show())
		}
	}
}

func (s *scanner) str() bool {
	s.pos++ // opening quote
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return true
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				s.pos++
				return s.fail("unexpected end of input; the JSON is truncated")
			}
			switch s.data[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				for i := 2; i < 6; i++ {
					if s.pos+i >= len(s.data) || !isHex(s.data[s.pos+i]) {
						s.pos += min(i, len(s.data)-s.pos)
						return s.fail("invalid \\u escape in string")
					}
				}
				s.pos += 6
			default:
				s.pos++
				return s.fail("invalid escape %s in string", s.show())
			}
		case c < 0x20:
			return s.fail("control character %q in string; escape it", c)
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n == 1 {
				return s.fail("invalid UTF-8 in string")
			}
			s.pos += n
		}
	}
	return s.fail("unexpected end of input inside a string; the JSON is truncated")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *scanner) number() bool {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return s.fail("unexpected %s in number; expected a digit", s.show())
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.fail("unexpected %s in number; expected a digit after '.'", s.show())
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.fail("unexpected %s in number; expected an exponent", s.show())
		}
	}
	return true
}

func (s *scanner) literal(word string) bool {
	for i := 0; i < len(word); i++ {
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input; the JSON is truncated")
		}
		if s.data[s.pos] != word[i] {
			return s.fail("unexpected %s; expected %q", s.show(), word)
		}
		s.pos++
	}
	return true
}
