package ccompat_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// srCode is the Confluent error code of a franz-go error, or 0.
func srCode(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

func wantCode(t *testing.T, what string, err error, code int, words ...string) {
	t.Helper()
	if srCode(err) != code {
		t.Errorf("%s: %v (code %d), want error code %d", what, err, srCode(err), code)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: message %q does not say %q", what, err.Error(), w)
		}
	}
}

func newSR(t *testing.T, url string, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func jsonSchema(t testing.TB, doc []byte) sr.Schema {
	return sr.Schema{Schema: string(doc), Type: sr.TypeJSON}
}

func docOf[T any](t testing.TB) []byte {
	t.Helper()
	s, err := schema.For[T]()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFranzGoClient drives every sr.Client method the spec lists against
// the handler, on SQLite and on PostgreSQL, and checks each answer against
// the library's own view of the registry.
func TestFranzGoClient(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testFranz(t, b)
		})
	}
}

func testFranz(t *testing.T, b backend) {
	c := b.open(t)
	reg := c.Registry()
	srv := serve(t, c, nil)
	cl := newSR(t, srv.URL)
	const subject = "orders.placed-v2"

	// A Go producer's registration is served with its text and id; the
	// row it writes needs the revision.
	p, err := c.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(ctx(t), OrderPlaced{OrderID: "o-1", Total: Money{Cents: 100, Currency: "EUR"}}); err != nil {
		t.Fatal(err)
	}
	revs, err := reg.Revisions(ctx(t), "orders.placed", 2)
	if err != nil || len(revs) != 1 {
		t.Fatalf("revisions: %+v, %v", revs, err)
	}
	goText, goID := string(revs[0].Schema.Canonical()), int(revs[0].ID)
	if want, _ := schema.For[OrderPlaced](); goText != string(want.Canonical()) {
		t.Fatalf("stored text %s is not OrderPlaced's canonical schema", goText)
	}
	latest, err := cl.SchemaByVersion(ctx(t), subject, -1)
	if err != nil || latest.Schema.Schema != goText || latest.ID != goID || latest.Version != 1 || latest.Subject != subject || latest.Type != sr.TypeJSON {
		t.Fatalf("SchemaByVersion(latest): %+v, %v; want revision 1, id %d, JSON, the producer's text", latest, err, goID)
	}

	types, err := cl.SupportedTypes(ctx(t))
	if err != nil || len(types) != 3 || !slices.Contains(types, sr.TypeJSON) || !slices.Contains(types, sr.TypeAvro) || !slices.Contains(types, sr.TypeProtobuf) {
		t.Errorf("SupportedTypes: %v, %v", types, err)
	}
	if subjects, err := cl.Subjects(ctx(t)); err != nil || !slices.Equal(subjects, []string{subject}) {
		t.Errorf("Subjects: %v, %v", subjects, err)
	}
	if vs, err := cl.SubjectVersions(ctx(t), subject); err != nil || !slices.Equal(vs, []int{1}) {
		t.Errorf("SubjectVersions: %v, %v", vs, err)
	}
	_, err = cl.SubjectVersions(ctx(t), "orders.placed-v9")
	wantCode(t, "SubjectVersions of a version without schemas", err, 40401)
	_, err = cl.SubjectVersions(ctx(t), "no-version-suffix")
	wantCode(t, "SubjectVersions of a free subject with no version", err, 40401, `subject "no-version-suffix": subject not found`)
	_, err = cl.SchemaByVersion(ctx(t), subject, 7)
	wantCode(t, "SchemaByVersion(7)", err, 40402)
	if text, err := cl.SchemaTextByVersion(ctx(t), subject, 1); err != nil || text != goText {
		t.Errorf("SchemaTextByVersion: %q, %v", text, err)
	}

	// A compatible edit through the API: CreateSchema registers, then reads
	// /schemas/ids/{id}/versions and the version back.
	noteDoc := docOf[OrderPlacedNote](t)
	created, err := cl.CreateSchema(ctx(t), subject, jsonSchema(t, noteDoc))
	if err != nil || created.Version != 2 || created.ID == goID || created.ID == 0 {
		t.Fatalf("CreateSchema(OrderPlacedNote): %+v, %v; want version 2 with a new id", created, err)
	}
	if again, err := cl.RegisterSchema(ctx(t), subject, jsonSchema(t, noteDoc), -1, -1); err != nil || again != created.ID {
		t.Errorf("RegisterSchema of the same schema again: %d, %v; want id %d", again, err, created.ID)
	}
	if n := len(mustRevisions(t, reg, "orders.placed", 2)); n != 2 {
		t.Errorf("%d revisions after an idempotent registration, want 2", n)
	}
	all, err := cl.Schemas(ctx(t), subject)
	if err != nil || len(all) != 2 || all[0].ID != goID || all[1].ID != created.ID {
		t.Errorf("Schemas: %+v, %v", all, err)
	}
	everything, err := cl.AllSchemas(ctx(t))
	if err != nil || len(everything) != 2 || everything[1].Schema.Schema != string(mustRevisions(t, reg, "orders.placed", 2)[1].Schema.Canonical()) {
		t.Errorf("AllSchemas: %+v, %v", everything, err)
	}
	if only, err := cl.AllSchemas(sr.WithParams(ctx(t), sr.LatestOnly)); err != nil || len(only) != 1 || only[0].Version != 2 {
		t.Errorf("AllSchemas(latestOnly): %+v, %v", only, err)
	}

	// The edited struct the producer is refused for is refused through the
	// API with HTTP 409 and the same problems; the verbose check lists them.
	_, goErr := c.Stream[OrderPlacedEdited]("orders.placed").Producer().Register(ctx(t), nil)
	if !errors.Is(goErr, sqlstreams.ErrIncompatibleSchema) {
		t.Fatalf("producer of OrderPlacedEdited: %v", goErr)
	}
	editedDoc := docOf[OrderPlacedEdited](t)
	_, err = cl.RegisterSchema(ctx(t), subject, jsonSchema(t, editedDoc), -1, -1)
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 409 || re.ErrorCode != 409 {
		t.Fatalf("RegisterSchema(OrderPlacedEdited): %v; want HTTP 409, error code 409", err)
	}
	for _, m := range verbose(goErr) {
		if !strings.Contains(re.Message, m) {
			t.Errorf("the 409 message does not list the producer's problem %q:\n%s", m, re.Message)
		}
	}
	checkErr := reg.Check(ctx(t), "orders.placed", 2, editedDoc)
	res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -1, jsonSchema(t, editedDoc))
	if err != nil || res.Is || len(res.Messages) == 0 || !slices.Equal(res.Messages, verbose(checkErr)) {
		t.Errorf("CheckCompatibility(latest, verbose): %+v, %v; want the problems of Registry.Check:\n%q", res, err, verbose(checkErr))
	}
	if res, err := cl.CheckCompatibility(ctx(t), subject, -1, jsonSchema(t, editedDoc)); err != nil || res.Is || res.Messages != nil {
		t.Errorf("CheckCompatibility without verbose: %+v, %v; want incompatible without messages", res, err)
	}
	if res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, 1, jsonSchema(t, noteDoc)); err != nil || !res.Is {
		t.Errorf("CheckCompatibility(1, note): %+v, %v; want compatible", res, err)
	}
	againstAll := reg.CheckAgainst(ctx(t), "orders.placed", 2, 0, editedDoc)
	if res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -2, jsonSchema(t, editedDoc)); err != nil || res.Is || !slices.Equal(res.Messages, verbose(againstAll)) {
		t.Errorf("CheckCompatibility(all versions): %+v, %v; want %q", res, err, verbose(againstAll))
	}
	_, err = cl.CheckCompatibility(ctx(t), subject, 9, jsonSchema(t, noteDoc))
	wantCode(t, "CheckCompatibility against a missing version", err, 40402)
	if res, err := cl.CheckCompatibility(ctx(t), "brand.new-v1", -1, jsonSchema(t, editedDoc)); err != nil || !res.Is {
		t.Errorf("CheckCompatibility(latest) of a missing subject: %+v, %v; want compatible", res, err)
	}
	_, err = cl.RegisterSchema(ctx(t), subject, sr.Schema{Schema: `{"type":"record","name":"x","fields":[]}`, Type: sr.TypeProtobuf}, -1, -1)
	wantCode(t, "RegisterSchema of Avro text as PROTOBUF", err, 42201, "PROTOBUF", "syntax error")
	_, err = cl.RegisterSchema(ctx(t), subject, sr.Schema{Schema: `{"type": `, Type: sr.TypeJSON}, -1, -1)
	wantCode(t, "RegisterSchema of malformed JSON", err, 42201)

	// Lookup by schema.
	found, err := cl.LookupSchema(ctx(t), subject, jsonSchema(t, noteDoc))
	if err != nil || found.Version != 2 || found.ID != created.ID || found.Subject != subject {
		t.Errorf("LookupSchema(note): %+v, %v", found, err)
	}
	_, err = cl.LookupSchema(ctx(t), subject, jsonSchema(t, editedDoc))
	wantCode(t, "LookupSchema of an unregistered schema", err, 40403)
	_, err = cl.LookupSchema(ctx(t), "missing.stream-v1", jsonSchema(t, noteDoc))
	wantCode(t, "LookupSchema on a missing subject", err, 40401)

	// Ids: one schema in two streams has one id; ids survive a restart.
	if _, err := c.Stream[OrderPlaced]("orders.archive").Producer().Register(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	byID, err := cl.SchemaByID(ctx(t), goID)
	if err != nil || byID.Schema != goText || byID.Type != sr.TypeJSON {
		t.Errorf("SchemaByID: %+v, %v", byID, err)
	}
	if text, err := cl.SchemaTextByID(ctx(t), goID); err != nil || text != goText {
		t.Errorf("SchemaTextByID: %q, %v", text, err)
	}
	_, err = cl.SchemaByID(ctx(t), 987654)
	wantCode(t, "SchemaByID of an unknown id", err, 40403)
	if subs, err := cl.SubjectsByID(ctx(t), goID); err != nil || !slices.Equal(subs, []string{"orders.archive-v2", subject}) {
		t.Errorf("SubjectsByID: %v, %v", subs, err)
	}
	svs, err := cl.SchemaVersionsByID(ctx(t), goID)
	if err != nil || !slices.Equal(svs, []sr.SubjectVersion{{Subject: "orders.archive-v2", Version: 1}, {Subject: subject, Version: 1}}) {
		t.Errorf("SchemaVersionsByID: %+v, %v", svs, err)
	}
	usages, err := cl.SchemaUsagesByID(ctx(t), goID)
	if err != nil || len(usages) != 2 {
		t.Errorf("SchemaUsagesByID: %+v, %v", usages, err)
	}
	for _, u := range usages {
		if u.ID != goID || u.Schema.Schema != goText {
			t.Errorf("usage %+v: want id %d and the producer's text", u, goID)
		}
	}
	restarted := newSR(t, serve(t, b.open(t), nil).URL)
	if again, err := restarted.SchemaByVersion(ctx(t), subject, 1); err != nil || again.ID != goID || again.Schema.Schema != goText {
		t.Errorf("after a restart: %+v, %v; want id %d and the same text", again, err, goID)
	}

	// Levels: registry-wide and per stream version, mapped one to one.
	cr := cl.Compatibility(ctx(t))
	if cr[0].Err != nil || cr[0].Level != sr.CompatBackward {
		t.Errorf("Compatibility(): %+v", cr[0])
	}
	if set := cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatFullTransitive}); set[0].Err != nil || set[0].Level != sr.CompatFullTransitive {
		t.Errorf("SetCompatibility(FULL_TRANSITIVE): %+v", set[0])
	}
	if l, err := reg.Level(ctx(t), sqlstreams.RegistryWide); err != nil || l.Value != schema.FullTransitive || l.Scope != "registry" {
		t.Errorf("registry-wide level after the PUT: %+v, %v", l, err)
	}
	wantCode(t, "Compatibility(subject) without its own level", cl.Compatibility(ctx(t), subject)[0].Err, 40408)
	if g := cl.Compatibility(sr.WithParams(ctx(t), sr.DefaultToGlobal), subject); g[0].Err != nil || g[0].Level != sr.CompatFullTransitive {
		t.Errorf("Compatibility(subject, defaultToGlobal): %+v", g[0])
	}
	if set := cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatNone}, subject); set[0].Err != nil || set[0].Level != sr.CompatNone {
		t.Errorf("SetCompatibility(NONE, subject): %+v", set[0])
	}
	if l, err := reg.VersionLevel(ctx(t), "orders.placed", 2); err != nil || l.Value != schema.None || l.Scope != "version" {
		t.Errorf("version 2's level after the PUT: %+v, %v", l, err)
	}
	if l, err := reg.Level(ctx(t), "orders.placed"); err != nil || l.Scope != "registry" {
		t.Errorf("the stream's level after a PUT on one version: %+v, %v; want the registry-wide one", l, err)
	}
	// A version's level is its own: v1 (no revisions yet) has none, and
	// defaultToGlobal answers the stream's, else the registry-wide one.
	wantCode(t, "Compatibility(orders.placed-v1) next to v2's own", cl.Compatibility(ctx(t), "orders.placed-v1")[0].Err, 40408)
	if g := cl.Compatibility(sr.WithParams(ctx(t), sr.DefaultToGlobal), "orders.placed-v1"); g[0].Err != nil || g[0].Level != sr.CompatFullTransitive {
		t.Errorf("Compatibility(orders.placed-v1, defaultToGlobal): %+v; want the registry's FULL_TRANSITIVE", g[0])
	}
	if err := reg.SetLevel(ctx(t), "orders.placed", schema.Forward); err != nil {
		t.Fatal(err)
	}
	if g := cl.Compatibility(sr.WithParams(ctx(t), sr.DefaultToGlobal), "orders.placed-v1"); g[0].Err != nil || g[0].Level != sr.CompatForward {
		t.Errorf("Compatibility(orders.placed-v1, defaultToGlobal) with a stream level: %+v; want the stream's FORWARD", g[0])
	}
	if err := reg.ClearLevel(ctx(t), "orders.placed"); err != nil {
		t.Fatal(err)
	}
	// Set before v1's first revision; NONE there lets nothing through at v2.
	if set := cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatNone}, "orders.placed-v1"); set[0].Err != nil {
		t.Errorf("SetCompatibility(NONE, orders.placed-v1): %+v", set[0])
	}
	if rs := cl.ResetCompatibility(ctx(t), subject); rs[0].Err != nil || rs[0].Level != sr.CompatNone {
		t.Errorf("ResetCompatibility(subject): %+v", rs[0])
	}
	if l, _ := reg.VersionLevel(ctx(t), "orders.placed", 2); l.Scope != "registry" {
		t.Errorf("version 2's level after the reset comes from %s", l.Scope)
	}
	required := `{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}`
	_, err = cl.CreateSchema(ctx(t), subject, sr.Schema{Schema: required, Type: sr.TypeJSON})
	wantCode(t, "an incompatible v2 revision while v1 is NONE", err, 409)
	if rs := cl.ResetCompatibility(ctx(t), "orders.placed-v1"); rs[0].Err != nil || rs[0].Level != sr.CompatNone {
		t.Errorf("ResetCompatibility(orders.placed-v1): %+v", rs[0])
	}
	if rs := cl.ResetCompatibility(ctx(t)); rs[0].Err != nil {
		t.Errorf("ResetCompatibility(): %+v", rs[0])
	}
	if l, _ := reg.Level(ctx(t), sqlstreams.RegistryWide); l.Scope != "default" || l.Value != schema.Backward {
		t.Errorf("registry-wide level after the reset: %+v", l)
	}

	// Modes, mapped one to one; READONLY refuses registrations.
	if m := cl.Mode(ctx(t)); m[0].Err != nil || m[0].Mode != sr.ModeReadWrite {
		t.Errorf("Mode(): %+v", m[0])
	}
	if m := cl.SetMode(ctx(t), sr.ModeReadOnly, subject); m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Errorf("SetMode(READONLY, subject): %+v", m[0])
	}
	if m, _ := reg.VersionMode(ctx(t), "orders.placed", 2); m.Value != sqlstreams.ModeReadOnly || m.Scope != "version" {
		t.Errorf("version 2's mode after the PUT: %+v", m)
	}
	if m, _ := reg.Mode(ctx(t), "orders.placed"); m.Value != sqlstreams.ModeReadWrite || m.Scope != "default" {
		t.Errorf("the stream's mode after a PUT on one version: %+v", m)
	}
	wantCode(t, "Mode(orders.placed-v1) next to v2's own", cl.Mode(ctx(t), "orders.placed-v1")[0].Err, 40409)
	if m := cl.Mode(ctx(t), subject); m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Errorf("Mode(subject): %+v", m[0])
	}
	_, err = cl.RegisterSchema(ctx(t), subject, sr.Schema{Schema: `{"type":"object","properties":{"x":{"type":"string"}}}`, Type: sr.TypeJSON}, -1, -1)
	wantCode(t, "RegisterSchema in READONLY", err, 42205, "READONLY")
	if m := cl.ResetMode(ctx(t), subject); m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Errorf("ResetMode(subject): %+v", m[0])
	}
	wantCode(t, "Mode(subject) without its own mode", cl.Mode(ctx(t), subject)[0].Err, 40409)

	// IMPORT takes an explicit id and version; READWRITE refuses them.
	_, err = cl.CreateSchemaWithIDAndVersion(ctx(t), "imported-v1", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON}, 5000, 3)
	wantCode(t, "an explicit id in READWRITE", err, 42205, "IMPORT")
	// IMPORT on a registry with schemas needs force=true, as in Confluent.
	wantCode(t, "IMPORT on a non-empty registry without force", cl.SetMode(ctx(t), sr.ModeImport)[0].Err, 42205, "force=true")
	if m := cl.SetMode(sr.WithParams(ctx(t), sr.Force), sr.ModeImport); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	imp, err := cl.CreateSchemaWithIDAndVersion(ctx(t), "imported-v1", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON}, 5000, 3)
	if err != nil || imp.ID != 5000 || imp.Version != 3 {
		t.Errorf("CreateSchemaWithIDAndVersion in IMPORT: %+v, %v; want id 5000, version 3", imp, err)
	}
	_, err = cl.CreateSchemaWithIDAndVersion(ctx(t), "imported-v1", sr.Schema{Schema: `{"type":"string"}`, Type: sr.TypeJSON}, 5000, 4)
	wantCode(t, "IMPORT of another schema under a taken id", err, 42207, "5000")
	if m := cl.ResetMode(ctx(t)); m[0].Err != nil || m[0].Mode != sr.ModeImport {
		t.Errorf("ResetMode(): %+v", m[0])
	}

	// Nothing is deleted: a row still in the log was written with
	// revision 1, and a permanent deletion needs a soft one first.
	_, err = cl.DeleteSubject(ctx(t), subject, sr.SoftDelete)
	wantCode(t, "DeleteSubject", err, 42205, "rows still in the log")
	err = cl.DeleteSchema(ctx(t), subject, 1, sr.SoftDelete)
	wantCode(t, "DeleteSchema", err, 42205, "rows still in the log")
	err = cl.DeleteSchema(ctx(t), subject, 1, sr.HardDelete)
	wantCode(t, "DeleteSchema permanently", err, 40407, "not deleted first")
	if n := len(mustRevisions(t, reg, "orders.placed", 2)); n != 2 {
		t.Errorf("%d revisions after the refused deletions, want 2", n)
	}

	// References: a shared schema, a document that refers to it, and the
	// referencing schema served by SchemaReferences.
	moneyDoc := `{"type":"object","properties":{"cents":{"type":"integer"},"currency":{"type":"string"}},"required":["cents","currency"]}`
	money, err := cl.CreateSchema(ctx(t), "money-v1", sr.Schema{Schema: moneyDoc, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	invoice := sr.Schema{Schema: `{"type":"object","properties":{"total":{"$ref":"money.json"}},"required":["total"]}`, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "money.json", Subject: "money-v1", Version: 1}}}
	inv, err := cl.CreateSchema(ctx(t), "invoices-v1", invoice)
	if err != nil || len(inv.References) != 1 || inv.References[0] != (sr.SchemaReference{Name: "money.json", Subject: "money-v1", Version: 1}) {
		t.Fatalf("CreateSchema with a reference: %+v, %v", inv, err)
	}
	users, err := cl.SchemaReferences(ctx(t), "money-v1", 1)
	if err != nil || len(users) != 1 || users[0].Subject != "invoices-v1" || users[0].ID != inv.ID {
		t.Errorf("SchemaReferences(money-v1, 1): %+v, %v; want invoices-v1 id %d", users, err, inv.ID)
	}
	if byID, err := cl.SchemaByID(ctx(t), inv.ID); err != nil || len(byID.References) != 1 {
		t.Errorf("SchemaByID of the referencing schema: %+v, %v; want its reference", byID, err)
	}
	// A change to money that breaks the invoice through the reference.
	_, err = cl.RegisterSchema(ctx(t), "money-v1", sr.Schema{Schema: `{"type":"object","properties":{"cents":{"type":"string"},"currency":{"type":"string"}},"required":["cents","currency"]}`, Type: sr.TypeJSON}, -1, -1)
	wantCode(t, "a money change that breaks invoices", err, 409, "stream invoices version 1 revision 1, which references it")
	_ = money
	_, err = cl.CreateSchema(ctx(t), "invoices-v1", sr.Schema{Schema: invoice.Schema, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "money.json", Subject: "money-v7", Version: 1}}})
	wantCode(t, "a reference to a missing subject", err, 42201, "money")
}

func mustRevisions(t *testing.T, reg *sqlstreams.Registry, stream string, version int) []sqlstreams.Revision {
	t.Helper()
	revs, err := reg.Revisions(ctx(t), stream, version)
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

// TestAuth: with credentials configured, franz-go's BasicAuth and
// BearerToken options get in and a client without them gets 401.
func TestAuth(t *testing.T) {
	t.Parallel()
	c := backends(t)[0].open(t)
	srv := serve(t, c, &ccompat.Options{BasicAuth: &ccompat.BasicAuth{User: "ci", Password: "s3cret"}, BearerToken: "tok"})
	for _, tc := range []struct {
		name string
		opts []sr.ClientOpt
		ok   bool
	}{
		{"basic", []sr.ClientOpt{sr.BasicAuth("ci", "s3cret")}, true},
		{"bearer", []sr.ClientOpt{sr.BearerToken("tok")}, true},
		{"wrong password", []sr.ClientOpt{sr.BasicAuth("ci", "nope")}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newSR(t, srv.URL, tc.opts...).Subjects(ctx(t))
			var re *sr.ResponseError
			if tc.ok && err != nil || !tc.ok && (!errors.As(err, &re) || re.StatusCode != 401) {
				t.Errorf("Subjects: %v; want ok %v (else HTTP 401)", err, tc.ok)
			}
		})
	}
}
