package driver

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// CutHistoryError cuts an error text to MaxHistoryError bytes at a UTF-8
// boundary, for a failure history entry.
func CutHistoryError(s string) string {
	if len(s) <= MaxHistoryError {
		return s
	}
	cut := MaxHistoryError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// historyEntry is one element of the stored failure history, a JSON array
// every driver writes the same way: {"attempt", "error", "at" (RFC 3339,
// UTC), "holder"}.
type historyEntry struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
	At      string `json:"at"`
	Holder  string `json:"holder"`
}

// ParseFailureHistory reads a stored failure history; "" is none.
func ParseFailureHistory(stored string) ([]FailureRecord, error) {
	if stored == "" {
		return nil, nil
	}
	var entries []historyEntry
	if err := json.Unmarshal([]byte(stored), &entries); err != nil {
		return nil, err
	}
	out := make([]FailureRecord, len(entries))
	for i, e := range entries {
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return nil, err
		}
		out[i] = FailureRecord{Attempt: e.Attempt, Error: e.Error, At: at.UTC(), Holder: e.Holder}
	}
	return out, nil
}
