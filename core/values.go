package sqlstreams

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// validatePayload checks an encoded payload against the bounds every driver
// stores byte for byte: valid UTF-8 JSON, at most MaxPayloadBytes, nested at
// most MaxJSONDepth deep. The JSON escape \u0000 is accepted (it is six ASCII
// bytes); a raw NUL byte is not valid JSON anyway.
func validatePayload(what string, data []byte) error {
	if len(data) > MaxPayloadBytes {
		return fmt.Errorf("%w: %s is %d bytes; the limit is %d (MaxPayloadBytes): store large documents elsewhere and send a reference",
			ErrInvalidMessage, what, len(data), MaxPayloadBytes)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: %s is not valid UTF-8; JSON text must be UTF-8 (encode binary data, for example as base64)", ErrInvalidMessage, what)
	}
	if d := jsonDepth(data); d > MaxJSONDepth {
		return fmt.Errorf("%w: %s nests arrays and objects %d deep; the limit is %d (MaxJSONDepth)", ErrInvalidMessage, what, d, MaxJSONDepth)
	}
	return nil
}

// payloadValid reports whether validatePayload accepts data, without
// building an error.
func payloadValid(data []byte) bool {
	return len(data) <= MaxPayloadBytes && utf8.Valid(data) && (shallow(data) || jsonDepth(data) <= MaxJSONDepth)
}

// shallow reports a document that cannot nest deeper than MaxJSONDepth
// because it has no more opening brackets than that (counting those in
// strings too): a vectorised count, where jsonDepth looks at every byte.
func shallow(data []byte) bool {
	return len(data) <= MaxJSONDepth || bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) <= MaxJSONDepth
}

// jsonDepth returns how deeply arrays and objects nest in data, counting
// brackets outside strings. It does not validate; json.Valid does that.
func jsonDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// validateHeaders checks header names and values: valid UTF-8 without NUL
// bytes (PostgreSQL stores neither), non-empty names, MaxHeaderBytes in all.
func validateHeaders(headers map[string]string) error {
	size := 0
	for name, value := range headers {
		size += len(name) + len(value)
		switch {
		case name == "":
			return fmt.Errorf("%w: a header has an empty name; give every header a name", ErrInvalidMessage)
		case !utf8.ValidString(name) || !utf8.ValidString(value):
			return fmt.Errorf("%w: header %q is not valid UTF-8; encode binary values, for example as base64", ErrInvalidMessage, name)
		case strings.IndexByte(name, 0) >= 0 || strings.IndexByte(value, 0) >= 0:
			return fmt.Errorf("%w: header %q contains a NUL byte, which not every database stores; remove it", ErrInvalidMessage, name)
		}
	}
	if size > MaxHeaderBytes {
		return fmt.Errorf("%w: headers take %d bytes; the limit is %d (MaxHeaderBytes)", ErrInvalidMessage, size, MaxHeaderBytes)
	}
	return nil
}
