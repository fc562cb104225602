// Package skeleton is the smallest sqlstreams driver that compiles: every
// method fails with driver.ErrDatabase and "not implemented", so the
// conformance suite run against it fails test by test, each failure naming
// the method to write next. Copy it to start a driver; docs/writing-a-driver.md
// walks through the rest.
package skeleton

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Driver is a driver that implements nothing yet.
type Driver struct{}

var (
	_ driver.Driver   = (*Driver)(nil)
	_ driver.Registry = (*Driver)(nil) // the schema registry's storage
)

// errNotImplemented names the method, so a failing test says what to write.
func errNotImplemented(method string) error {
	return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("skeleton: %s: %w", method, errors.ErrUnsupported),
		Advice: "this driver does not implement " + method + " yet"}
}

func (*Driver) Name() string                            { return "skeleton" }
func (*Driver) Capabilities() driver.Capabilities       { return driver.Capabilities{} }
func (*Driver) Migrate(context.Context) error           { return errNotImplemented("Migrate") }
func (*Driver) Close() error                            { return nil }
func (*Driver) Migrations() ([]driver.Migration, error) { return nil, errNotImplemented("Migrations") }

func (*Driver) CreateStream(context.Context, driver.CreateStreamParams) (driver.StreamConfig, error) {
	return driver.StreamConfig{}, errNotImplemented("CreateStream")
}
func (*Driver) LookupStream(context.Context, driver.LookupStreamParams) (driver.StreamConfig, error) {
	return driver.StreamConfig{}, errNotImplemented("LookupStream")
}
func (*Driver) ListStreams(context.Context, driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	return nil, errNotImplemented("ListStreams")
}
func (*Driver) RenameStream(context.Context, driver.RenameStreamParams) error {
	return errNotImplemented("RenameStream")
}
func (*Driver) DestroyStream(context.Context, driver.DestroyStreamParams) error {
	return errNotImplemented("DestroyStream")
}
func (*Driver) Append(context.Context, driver.AppendParams) ([]int64, error) {
	return nil, errNotImplemented("Append")
}
func (*Driver) RegisterGroup(context.Context, driver.RegisterGroupParams) (driver.GroupConfig, error) {
	return driver.GroupConfig{}, errNotImplemented("RegisterGroup")
}
func (*Driver) ListGroups(context.Context, driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	return nil, errNotImplemented("ListGroups")
}
func (*Driver) DeleteGroup(context.Context, driver.DeleteGroupParams) error {
	return errNotImplemented("DeleteGroup")
}
func (*Driver) Claim(context.Context, driver.ClaimParams) (driver.ClaimResult, error) {
	return driver.ClaimResult{}, errNotImplemented("Claim")
}
func (*Driver) Ack(context.Context, driver.AckParams) (driver.SettleResult, error) {
	return driver.SettleResult{}, errNotImplemented("Ack")
}
func (*Driver) Fail(context.Context, driver.FailParams) (driver.SettleResult, error) {
	return driver.SettleResult{}, errNotImplemented("Fail")
}
func (*Driver) Release(context.Context, driver.ReleaseParams) (driver.SettleResult, error) {
	return driver.SettleResult{}, errNotImplemented("Release")
}
func (*Driver) Extend(context.Context, driver.ExtendParams) (driver.SettleResult, error) {
	return driver.SettleResult{}, errNotImplemented("Extend")
}
func (*Driver) ListDead(context.Context, driver.ListDeadParams) ([]driver.DeadLetter, error) {
	return nil, errNotImplemented("ListDead")
}
func (*Driver) Replay(context.Context, driver.ReplayParams) (int64, error) {
	return 0, errNotImplemented("Replay")
}
func (*Driver) Discard(context.Context, driver.DiscardParams) (int64, error) {
	return 0, errNotImplemented("Discard")
}
func (*Driver) Health(context.Context, driver.HealthParams) (driver.HealthStats, error) {
	return driver.HealthStats{}, errNotImplemented("Health")
}
func (*Driver) Compact(context.Context, driver.CompactParams) (int64, error) {
	return 0, errNotImplemented("Compact")
}
func (*Driver) Retain(context.Context, driver.RetainParams) (driver.RetainResult, error) {
	return driver.RetainResult{}, errNotImplemented("Retain")
}
func (*Driver) SetCursors(context.Context, driver.SetCursorsParams) error {
	return errNotImplemented("SetCursors")
}
func (*Driver) ReadRows(context.Context, driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	return driver.ReadRowsResult{}, errNotImplemented("ReadRows")
}
func (*Driver) AppliedMigrations(context.Context, driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	return nil, errNotImplemented("AppliedMigrations")
}
func (*Driver) ApplyMigration(context.Context, driver.ApplyMigrationParams) error {
	return errNotImplemented("ApplyMigration")
}
func (*Driver) CheckPrivileges(context.Context, driver.CheckPrivilegesParams) error {
	return errNotImplemented("CheckPrivileges")
}

func (*Driver) RegistrySettings(context.Context, driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return driver.RegistrySettings{}, errNotImplemented("RegistrySettings")
}
func (*Driver) UpdateRegistrySettings(context.Context, driver.UpdateRegistrySettingsParams) error {
	return errNotImplemented("UpdateRegistrySettings")
}
func (*Driver) RecordSchema(context.Context, driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	return driver.SchemaRevision{}, false, errNotImplemented("RecordSchema")
}
func (*Driver) SchemaRevisions(context.Context, driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	return nil, errNotImplemented("SchemaRevisions")
}
func (*Driver) RecordReader(context.Context, driver.RecordReaderParams) error {
	return errNotImplemented("RecordReader")
}
func (*Driver) Readers(context.Context, driver.ReadersParams) ([]driver.Reader, error) {
	return nil, errNotImplemented("Readers")
}
func (*Driver) LiveRevisions(context.Context, driver.LiveRevisionsParams) ([]int, error) {
	return nil, errNotImplemented("LiveRevisions")
}
