package schema_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

type orderCommitted struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

type orderWithOptional struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
	Note    string `json:"note,omitempty"`
}

type orderWithRequired struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
	Channel string `json:"channel"`
}

type orderRetyped struct {
	OrderID string `json:"order_id"`
	Cents   string `json:"cents"`
}

func TestCheckFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "order.v1.json")
	if err := schema.WriteFile[orderCommitted](path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		check      func() (*schema.Report, error)
		compatible bool
		kind       schema.DiffKind
	}{
		{"unchanged", func() (*schema.Report, error) { return schema.CheckFile[orderCommitted](path, schema.Full) }, true, ""},
		{"optional member added", func() (*schema.Report, error) { return schema.CheckFile[orderWithOptional](path, schema.Backward) }, true, ""},
		{"required member added", func() (*schema.Report, error) { return schema.CheckFile[orderWithRequired](path, schema.Backward) }, false, "REQUIRED_ATTRIBUTE_ADDED"},
		{"member retyped", func() (*schema.Report, error) { return schema.CheckFile[orderRetyped](path, schema.Backward) }, false, "TYPE_CHANGED"},
		{"anything goes at NONE", func() (*schema.Report, error) { return schema.CheckFile[orderRetyped](path, schema.None) }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := tc.check()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Compatible() != tc.compatible {
				t.Fatalf("compatible = %v, want %v:\n%s", rep.Compatible(), tc.compatible, rep)
			}
			if tc.kind != "" && !strings.Contains(rep.String(), string(tc.kind)) {
				t.Errorf("report does not name %s:\n%s", tc.kind, rep)
			}
		})
	}
}

func TestCheckFileMissingSaysWhatToDo(t *testing.T) {
	t.Parallel()
	_, err := schema.CheckFile[orderCommitted](filepath.Join(t.TempDir(), "missing.json"), schema.Backward)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "WriteFile") {
		t.Fatalf("err = %v, want a not-exist error that says to write the file", err)
	}
}
