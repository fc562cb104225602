package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

const (
	avroStream = "orders.avro"
	// avroV1 is an order; avroV1Note adds a field with a default (a
	// reader of it reads v1 data); avroV1Cents adds one without, which a
	// reader cannot fill from v1 data.
	avroV1      = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
	avroV1Note  = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"note","type":"string","default":""}]}`
	avroV1Cents = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"note","type":"string","default":""},{"name":"cents","type":"long"}]}`

	protoSubject = "invoices-value"
	protoV1      = "syntax = \"proto3\";\npackage shop;\n\nmessage Invoice {\n  string id = 1;\n  int64 cents = 2;\n}\n"
	protoV2      = "syntax = \"proto3\";\npackage shop;\n\nmessage Invoice {\n  string id = 1;\n  string cents = 2;\n}\n"

	customerSubject = "shop.Customer"
	paymentsSubject = "payments-value"
	customerV1      = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"name","type":"string"}]}`
	paymentV1       = `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"customer","type":"shop.Customer"}]}`
	paymentV2       = `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"customer","type":"shop.Customer"},{"name":"memo","type":["null","string"],"default":null}]}`
)

// openTyped opens a client with the Avro and Protobuf formats enabled, as
// the CLI and ccompat open theirs.
func openTyped(t testing.TB, tg conformance.Target) *sqlstreams.Client {
	t.Helper()
	return openClient(t, tg, sqlstreams.WithFormats(avro.Format(), protobuf.Format()))
}

// seedTypes records an Avro stream version with three revisions (the
// third breaks BACKWARD, let in under NONE), a Protobuf free subject whose
// second version changes a field's kind, and an Avro free subject that
// uses a type another subject defines (a reference).
func seedTypes(t testing.TB, c *sqlstreams.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := c.Registry()
	for i, doc := range []string{avroV1, avroV1Note, avroV1Cents} {
		if i == 2 {
			if err := reg.SetLevel(ctx, avroStream, schema.None); err != nil {
				t.Fatal(err)
			}
		}
		fatal{t}.on(reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: avroStream, Version: 1, Type: schema.TypeAvro, Schema: []byte(doc)}))
	}
	if err := reg.SetLevel(ctx, avroStream, schema.Backward); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetSubjectLevel(ctx, protoSubject, schema.None); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{protoV1, protoV2} {
		fatal{t}.on(reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: protoSubject, Type: schema.TypeProtobuf, Schema: []byte(doc)}))
	}
	if err := reg.SetSubjectLevel(ctx, protoSubject, schema.Full); err != nil {
		t.Fatal(err)
	}
	fatal{t}.on(reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: customerSubject, Type: schema.TypeAvro, Schema: []byte(customerV1)}))
	refs := []sqlstreams.SubjectReference{{Name: "shop.Customer", Subject: customerSubject, Version: 1}}
	for _, doc := range []string{paymentV1, paymentV2} {
		fatal{t}.on(reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: paymentsSubject, Type: schema.TypeAvro, Schema: []byte(doc),
			References: refs}))
	}
}

// problemAt is whether a diff names a problem of kind in direction whose
// path or message names field.
func problemAt(d view.Comparison, direction, kind, field string) bool {
	for _, p := range d.Problems {
		if p.Direction == direction && p.Kind == kind && strings.Contains(p.Path+" "+p.Message, field) {
			return true
		}
	}
	return false
}

// TestTypedDiffs judges Avro and Protobuf revisions and subject versions
// with the client's formats: a compatible pair is compatible, a breaking
// one names its kind and field, and both texts are shown as registered.
func TestTypedDiffs(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openTyped(t, tg)
			seedTypes(t, c)
			srv := serve(t, c, false).URL + prefix

			t.Run("avro stream version", func(t *testing.T) {
				ok := getJSON[view.SchemaDiff](t, srv, "/streams/"+avroStream+"/schemas/1?a=1&b=2")
				if ok.Type != "AVRO" || !ok.Compatible || len(ok.Problems) != 0 || ok.LevelSource != "stream" {
					t.Errorf("a field added with a default: %+v", ok)
				}
				bad := getJSON[view.SchemaDiff](t, srv, "/streams/"+avroStream+"/schemas/1")
				if bad.A != 2 || bad.B != 3 || bad.Compatible || !problemAt(bad.Comparison, "new reader, old data", "READER_FIELD_MISSING_DEFAULT_VALUE", "cents") {
					t.Errorf("a field added without a default, by default the last two revisions: %+v", bad)
				}
				if !strings.Contains(string(bad.BSchema), `"cents"`) || !strings.Contains(string(bad.ASchema), `"note"`) {
					t.Errorf("texts %s / %s", bad.ASchema, bad.BSchema)
				}
				forward := getJSON[view.SchemaDiff](t, srv, "/streams/"+avroStream+"/schemas/1?a=2&b=3&level=FORWARD")
				if !forward.Compatible || forward.LevelSource != "asked" {
					t.Errorf("an old reader skips the new field: %+v", forward)
				}
				code, body := get(t, srv, "/streams/"+avroStream+"/schemas/1")
				txt := text(body)
				for _, w := range []string{"revision 2 → revision 3 AVRO", "incompatible", "READER_FIELD_MISSING_DEFAULT_VALUE", "cents", `"name": "note"`} {
					if code != http.StatusOK || !strings.Contains(txt, w) {
						t.Errorf("diff page %d: no %q in\n%s", code, w, txt)
					}
				}
			})

			t.Run("protobuf subject", func(t *testing.T) {
				d := getJSON[view.SubjectDiff](t, srv, "/registry/subjects/"+protoSubject+"/diff")
				if d.Type != "PROTOBUF" || d.A != 1 || d.B != 2 || d.Compatible || d.Level != "FULL" || d.LevelSource != "subject" {
					t.Errorf("diff %+v", d)
				}
				for _, dir := range []string{"new reader, old data", "old reader, new data"} {
					if !problemAt(d.Comparison, dir, "FIELD_SCALAR_KIND_CHANGED", "cents") {
						t.Errorf("no FIELD_SCALAR_KIND_CHANGED at cents %s in %+v", dir, d.Problems)
					}
				}
				var proto string
				if err := json.Unmarshal(d.BSchema, &proto); err != nil || proto != protoV2 {
					t.Errorf("b_schema %s: %v", d.BSchema, err)
				}
				same := getJSON[view.SubjectDiff](t, srv, "/registry/subjects/"+protoSubject+"/diff?a=2&b=2")
				if !same.Compatible || len(same.Differences) != 0 {
					t.Errorf("a version against itself %+v", same)
				}
				_, body := get(t, srv, "/registry/subjects/"+protoSubject+"/diff")
				if txt := text(body); !strings.Contains(txt, "string cents = 2;") || !strings.Contains(txt, "FIELD_SCALAR_KIND_CHANGED") {
					t.Errorf("diff page\n%s", txt)
				}
			})

			t.Run("avro subject with a reference", func(t *testing.T) {
				d := getJSON[view.SubjectDiff](t, srv, "/registry/subjects/"+paymentsSubject+"/diff")
				if d.Type != "AVRO" || !d.Compatible || d.LevelSource != "default" {
					t.Errorf("an optional memo added: %+v", d)
				}
				page := getJSON[view.SubjectPage](t, srv, "/registry/subjects/"+paymentsSubject)
				if len(page.Versions) != 2 || page.Versions[1].Type != "AVRO" || len(page.Versions[1].References) != 1 ||
					page.Versions[1].References[0] != (view.SubjectReference{Name: "shop.Customer", Subject: customerSubject, Version: 1}) ||
					!strings.Contains(string(page.Versions[1].Schema), `"memo"`) {
					t.Errorf("subject page %+v", page)
				}
				_, body := get(t, srv, "/registry/subjects/"+paymentsSubject)
				txt := text(body)
				for _, w := range []string{"Subject payments-value", "Version 2 AVRO · id", "References shop.Customer → shop.Customer v1",
					`"name": "memo"`, "Compare versions"} {
					if !strings.Contains(txt, w) {
						t.Errorf("subject page: no %q in\n%s", w, txt)
					}
				}
			})

			t.Run("registry page", func(t *testing.T) {
				reg := getJSON[view.Registry](t, srv, "/registry")
				if len(reg.Subjects) != 1 || reg.Subjects[0].Subject != avroStream+"-v1" || reg.Subjects[0].Type != "AVRO" || reg.Subjects[0].Revisions != 3 {
					t.Errorf("stream subjects %+v", reg.Subjects)
				}
				got := map[string]view.FreeSubject{}
				for _, fs := range reg.FreeSubjects {
					got[fs.Subject] = fs
				}
				if p := got[protoSubject]; p.Type != "PROTOBUF" || p.Versions != 2 || p.Latest != 2 || p.ID == 0 || p.Level != (view.Setting{Value: "FULL", Scope: "subject"}) {
					t.Errorf("protobuf subject %+v", p)
				}
				if len(got) != 3 || got[paymentsSubject].Type != "AVRO" || got[customerSubject].Versions != 1 {
					t.Errorf("free subjects %+v", reg.FreeSubjects)
				}
				_, body := get(t, srv, "/registry")
				txt := text(body)
				for _, w := range []string{"orders.avro-v1 orders.avro v1 AVRO 3 3", "invoices-value 2 2", "PROTOBUF FULL (subject)"} {
					if !strings.Contains(txt, w) {
						t.Errorf("registry page: no %q in\n%s", w, txt)
					}
				}
			})

			t.Run("errors", func(t *testing.T) {
				for _, tc := range []struct {
					path string
					code int
					want string
				}{
					{"/registry/subjects/nobody-value", 404, "subject not found"},
					{"/registry/subjects/nobody-value/diff", 404, "subject not found"},
					{"/registry/subjects/" + protoSubject + "/diff?a=7", 400, `versions of subject \"invoices-value\" are 1, 2`},
					{"/registry/subjects/" + protoSubject + "/diff?level=SOMETIMES", 400, "unknown compatibility level"},
					{"/streams/" + avroStream + "/schemas/1?b=9", 400, "revisions at v1 are 1, 2, 3"},
				} {
					code, body := get(t, srv, tc.path, "Accept", "application/json")
					if code != tc.code || !strings.Contains(body, tc.want) {
						t.Errorf("GET %s: %d %s, want %d %q", tc.path, code, body, tc.code, tc.want)
					}
				}
			})

			// Runs last: it soft-deletes a version the subtests above count.
			t.Run("soft-deleted version", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Registry().DeleteSubjectVersion(ctx, protoSubject, 2, false); err != nil {
					t.Fatal(err)
				}
				page := getJSON[view.SubjectPage](t, srv, "/registry/subjects/"+protoSubject)
				if len(page.Versions) != 2 || page.Versions[0].Deleted || !page.Versions[1].Deleted {
					t.Errorf("subject page %+v", page)
				}
				_, body := get(t, srv, "/registry/subjects/"+protoSubject)
				if txt := text(body); !strings.Contains(txt, "Version 2 PROTOBUF · id") || !strings.Contains(txt, "soft-deleted") || strings.Contains(txt, "Compare versions") {
					t.Errorf("subject page with one live version\n%s", txt)
				}
				for _, fs := range getJSON[view.Registry](t, srv, "/registry").FreeSubjects {
					if fs.Subject == protoSubject && (fs.Versions != 1 || fs.Latest != 1) {
						t.Errorf("registry page counts live versions: %+v", fs)
					}
				}
				if d := getJSON[view.SubjectDiff](t, srv, "/registry/subjects/"+protoSubject+"/diff?a=1&b=2"); d.Compatible {
					t.Errorf("the deleted version is still compared: %+v", d)
				}
			})
		})
	}
}

// TestTypedDiffWithoutFormats shows what a console over a client without
// the Avro format says: it cannot judge, never "compatible".
func TestTypedDiffWithoutFormats(t *testing.T) {
	tg := engines()[0]
	ns := tg.NewNamespace(t)
	seedTypes(t, openOn(t, tg, ns, sqlstreams.WithFormats(avro.Format(), protobuf.Format())))
	srv := serve(t, openOn(t, tg, ns), false).URL + prefix
	d := getJSON[view.SchemaDiff](t, srv, "/streams/"+avroStream+"/schemas/1?a=1&b=2")
	if d.Compatible || len(d.Problems) == 0 || !strings.Contains(d.Problems[0].Message, "no AVRO format enabled") {
		t.Errorf("diff without the format %+v", d)
	}
}
