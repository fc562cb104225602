package view

import (
	"fmt"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// AlterPlan is what Stream.Alter would change on a stream: each setting
// before and after, and what each change means for the rows already in the
// log. It is the document of `sqlstreams streams alter` (a dry run unless
// --execute) and of the console's alter form, so both explain a change in
// the same words before it is made.
type AlterPlan struct {
	Stream   string          `json:"stream"`
	Executed bool            `json:"executed"`
	Settings []SettingChange `json:"settings"`
	Notes    []string        `json:"notes"`
}

// SettingChange is one setting of a stream before and after a change;
// Changed says whether they differ.
type SettingChange struct {
	Setting string `json:"setting"`
	Before  string `json:"before"`
	After   string `json:"after"`
	Changed bool   `json:"changed"`
}

// What each kind of change means, in the words of docs/contracts.md (C15,
// "Alter").
const (
	notePartitions = "partitions added: keys move to their new partition for messages produced from now on; " +
		"rows already written stay where they are, and order per key holds within each partition"
	noteCompactOn = "compaction on: each key keeps only its newest row; older rows of a key and rows without a key " +
		"stop being delivered now and are removed at the next maintenance; every new message needs a key"
	noteCompactOff = "compaction off: every row is delivered and kept (subject to retention) from now on"
	noteRetention  = "retention: the new limits apply at the next maintenance run"
	noteHard       = "hard retention: rows that groups have not read yet may be removed"
)

// PlanAlter compares a stream as stored with the changes asked for. It
// refuses what Alter would refuse before reading anything else: no change,
// or fewer partitions (ErrFewerPartitions, which cannot be undone by
// waiting: partitions are only added).
func PlanAlter(info sqlstreams.StreamInfo, c sqlstreams.StreamChanges) (AlterPlan, error) {
	after := info
	if c.Partitions > 0 {
		if c.Partitions < info.Partitions {
			return AlterPlan{}, fmt.Errorf("stream %q has %d partitions, asked for %d: %w; keep %d or more, or create a new stream with fewer",
				info.Name, info.Partitions, c.Partitions, sqlstreams.ErrFewerPartitions, info.Partitions)
		}
		after.Partitions = c.Partitions
	}
	if c.Compacted != nil {
		after.Compacted = *c.Compacted
	}
	if c.Retention != nil {
		after.Retention = *c.Retention
	}
	plan := AlterPlan{Stream: info.Name, Settings: []SettingChange{
		change("partitions", fmt.Sprint(info.Partitions), fmt.Sprint(after.Partitions)),
		change("compacted", fmt.Sprint(info.Compacted), fmt.Sprint(after.Compacted)),
		change("max-age", ageText(info.Retention), ageText(after.Retention)),
		change("max-rows", rowsText(info.Retention), rowsText(after.Retention)),
		change("hard", fmt.Sprint(info.Retention.Hard), fmt.Sprint(after.Retention.Hard)),
	}, Notes: []string{}}
	plan.Notes = notes(info, after)
	if len(plan.Notes) == 0 {
		return AlterPlan{}, fmt.Errorf("%w: stream %q already has these settings; nothing to change", sqlstreams.ErrInvalidOption, info.Name)
	}
	return plan, nil
}

func change(setting, before, after string) SettingChange {
	return SettingChange{Setting: setting, Before: before, After: after, Changed: before != after}
}

// notes says what each change from before to after means, in the order
// the settings are listed; none when nothing changes.
func notes(before, after sqlstreams.StreamInfo) []string {
	out := []string{}
	if after.Partitions != before.Partitions {
		out = append(out, notePartitions)
	}
	switch {
	case after.Compacted && !before.Compacted:
		out = append(out, noteCompactOn)
	case !after.Compacted && before.Compacted:
		out = append(out, noteCompactOff)
	}
	if after.Retention != before.Retention {
		out = append(out, noteRetention)
		if after.Retention.Hard {
			out = append(out, noteHard)
		}
	}
	return out
}

func ageText(r sqlstreams.Retention) string {
	if r.MaxAge <= 0 {
		return "-"
	}
	return r.MaxAge.String()
}

func rowsText(r sqlstreams.Retention) string {
	if r.MaxRows <= 0 {
		return "-"
	}
	return fmt.Sprint(r.MaxRows)
}
