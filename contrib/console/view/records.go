package view

import (
	"bytes"
	"context"
	"encoding/json"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Record is one row of a stream's log. Key is null for a row without a
// key, which is not the same as an empty key.
type Record struct {
	ID             int64             `json:"id"`
	Partition      int               `json:"partition"`
	SchemaVersion  int               `json:"schema_version"`
	Key            *string           `json:"key"`
	RoutingKey     string            `json:"routing_key"`
	CompactionRank int64             `json:"compaction_rank"`
	ProducedAt     *string           `json:"produced_at"`
	Headers        map[string]string `json:"headers"`
	Payload        json.RawMessage   `json:"payload"`
}

// RecordOf is the view of r.
func RecordOf(r sqlstreams.Record) Record {
	out := Record{ID: r.ID, Partition: r.Partition, SchemaVersion: r.SchemaVersion, RoutingKey: r.RoutingKey,
		CompactionRank: r.CompactionRank, ProducedAt: Time(r.ProducedAt), Headers: strmap(r.Headers), Payload: payload(r.Payload)}
	if r.HasKey {
		k := r.Key
		out.Key = &k
	}
	return out
}

// RecordPage is a page of a stream's log: NextAfter is the id to read after
// for the next page, Done says no row followed it when it was read.
type RecordPage struct {
	Stream    string   `json:"stream"`
	Records   []Record `json:"records"`
	NextAfter int64    `json:"next_after"`
	Done      bool     `json:"done"`
}

// RecordsOf is the view of recs.
func RecordsOf(recs []sqlstreams.Record) []Record {
	out := []Record{}
	for _, r := range recs {
		out = append(out, RecordOf(r))
	}
	return out
}

// Failure is one failed attempt of a delivery.
type Failure struct {
	Attempt int     `json:"attempt"`
	Error   string  `json:"error"`
	At      *string `json:"at"`
	Holder  string  `json:"holder"`
}

// DeadLetter is a dead delivery with its row, its last error and its
// history of failures.
type DeadLetter struct {
	ID            int64             `json:"id"`
	SchemaVersion int               `json:"schema_version"`
	Partition     int               `json:"partition"`
	Key           string            `json:"key"`
	RoutingKey    string            `json:"routing_key"`
	Attempts      int               `json:"attempts"`
	FirstFailed   *string           `json:"first_failed"`
	DiedAt        *string           `json:"died_at"`
	ProducedAt    *string           `json:"produced_at"`
	Holder        string            `json:"holder"`
	Error         string            `json:"error"`
	Headers       map[string]string `json:"headers"`
	Payload       json.RawMessage   `json:"payload"`
	// History is null where it was not read (a list of dead letters) and
	// the failures, oldest first, where it was (one dead letter).
	History []Failure `json:"history"`
}

// DeadLetterOf is the view of d.
func DeadLetterOf(d sqlstreams.DeadLetter) DeadLetter {
	out := DeadLetter{ID: d.ID, SchemaVersion: d.SchemaVersion, Partition: d.Partition, Key: d.Key, RoutingKey: d.RoutingKey,
		Attempts: d.Attempt, FirstFailed: Time(d.FirstFailed), DiedAt: Time(d.DiedAt), ProducedAt: Time(d.ProducedAt),
		Holder: d.Holder, Error: d.Error, Headers: strmap(d.Headers), Payload: payload(d.Payload)}
	if d.History != nil {
		out.History = []Failure{}
	}
	for _, f := range d.History {
		out.History = append(out.History, Failure{f.Attempt, f.Error, Time(f.At), f.Holder})
	}
	return out
}

// DeadLetterPage is a page of a group's dead letters: Dead counts them all,
// NextAfter is the id to list after for the next page, 0 on the last page.
type DeadLetterPage struct {
	Stream      string       `json:"stream"`
	Group       string       `json:"group"`
	Dead        int64        `json:"dead"`
	DeadLetters []DeadLetter `json:"dead_letters"`
	NextAfter   int64        `json:"next_after"`
}

// DeadLettersOf is the view of dls.
func DeadLettersOf(dls []sqlstreams.DeadLetter) []DeadLetter {
	out := []DeadLetter{}
	for _, d := range dls {
		out = append(out, DeadLetterOf(d))
	}
	return out
}

// ReadDeadLetters reads a page of up to limit dead letters of g with ids
// above after. It asks for one more than a page, so that next, where the
// following page starts, is 0 only when no dead letter follows this page.
func ReadDeadLetters(ctx context.Context, g *sqlstreams.GroupAdmin, after int64, limit int) (page []sqlstreams.DeadLetter, next int64, err error) {
	dls, err := g.DeadLetters(ctx, after, limit+1)
	if err != nil {
		return nil, 0, err
	}
	if len(dls) > limit {
		dls = dls[:limit]
		next = dls[limit-1].ID
	}
	return dls, next, nil
}

// PrettyJSON indents a JSON document for a person to read; anything else
// (a payload that is not JSON) is returned as it is, so it is still shown.
func PrettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}
