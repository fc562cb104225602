package ccompat_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
)

// The order message of the Protobuf evolution story, in the versions it
// registers.
const (
	protoV1 = `syntax = "proto3";
package shop.orders;

// OrderPlaced is written when a customer checks out.
message OrderPlaced {
  string order_id = 1;
  string customer_id = 2;
  int64 total_cents = 3;
}
`
	protoV2 = `syntax = "proto3";
package shop.orders;

message OrderPlaced {
  string order_id = 1;
  string customer_id = 2;
  int64 total_cents = 3;
  string currency = 4;
}
`
	protoV3 = `syntax = "proto3";
package shop.orders;

message OrderPlaced {
  string order_id = 1;
  string customer_id = 2;
  string total_cents = 3;
  string currency = 4;
}
`
)

func protoSchema(doc string) sr.Schema { return sr.Schema{Schema: doc, Type: sr.TypeProtobuf} }

// TestProtobufHowTo runs a Protobuf evolution story through the Confluent
// API with franz-go's client, on SQLite and PostgreSQL: v1, then v2 adding
// a field under BACKWARD, then v3 changing a field's type to one that
// encodes differently, refused with 409 naming the kind and the field; a
// oneof member's removal passing FORWARD and failing BACKWARD and FULL while
// a plain field's removal passes all three; and the transitive case; under
// stream versions and under free subjects, where a second message type is
// refused under the topic's subject and accepted under its own name.
func TestProtobufHowTo(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t), nil)
			cl, err := sr.NewClient(sr.URLs(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			for _, names := range []storyNames{streamNames, topicNames} {
				t.Run(names.orders, func(t *testing.T) { protobufStory(t, cl, names) })
			}
			cancelled := protoSchema("syntax = \"proto3\";\npackage shop.orders;\nmessage OrderCancelled {\n  string order_id = 1;\n}\n")
			_, err = cl.CreateSchema(ctx(t), "orders-value", cancelled)
			wantCode(t, "a second message type under the topic subject", err, 409, "MESSAGE_REMOVED", "OrderPlaced")
			if v, err := cl.CreateSchema(ctx(t), "shop.orders.OrderCancelled", cancelled); err != nil || v.Version != 1 {
				t.Errorf("OrderCancelled under its record name: %+v, %v; want version 1", v, err)
			}
		})
	}
}

func protobufStory(t *testing.T, cl *sr.Client, names storyNames) {
	subject := names.orders
	v1, err := cl.CreateSchema(ctx(t), subject, protoSchema(protoV1))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := cl.CreateSchema(ctx(t), subject, protoSchema(protoV2))
	if err != nil {
		t.Fatalf("v2 adding a field under BACKWARD: %v", err)
	}
	if v1.ID == v2.ID || v1.Version != 1 || v2.Version != 2 || v2.Type != sr.TypeProtobuf {
		t.Errorf("v1 %+v, v2 %+v; want versions 1 and 2 with two ids, PROTOBUF", v1, v2)
	}
	_, err = cl.CreateSchema(ctx(t), subject, protoSchema(protoV3))
	wantCode(t, "v3 with total_cents a string", err, 409, "incompatible with an earlier schema", "FIELD_SCALAR_KIND_CHANGED", "#/OrderPlaced/3", "total_cents")
	if versions, err := cl.SubjectVersions(ctx(t), subject); err != nil || len(versions) != 2 {
		t.Errorf("versions after the refusal: %v, %v; want [1 2]", versions, err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -1, protoSchema(protoV3))
	if err != nil || res.Is || !strings.Contains(strings.Join(res.Messages, " "), "total_cents") {
		t.Errorf("compatibility of v3: %+v, %v; want incompatible, naming the field", res, err)
	}

	// The text is kept as registered; the same file without its
	// comment and spacing is version 1.
	byID, err := cl.SchemaByID(ctx(t), v1.ID)
	if err != nil || byID.Schema != protoV1 || byID.Type != sr.TypeProtobuf {
		t.Errorf("SchemaByID(%d) = %+v, %v; want the text as registered, PROTOBUF", v1.ID, byID, err)
	}
	respaced := strings.Join(strings.Fields(strings.Replace(protoV1, "// OrderPlaced is written when a customer checks out.", "", 1)), " ")
	again, err := cl.CreateSchema(ctx(t), subject, protoSchema(respaced))
	if err != nil || again.ID != v1.ID || again.Version != 1 {
		t.Errorf("v1 respaced: %+v, %v; want id %d, version 1", again, err, v1.ID)
	}

	protoWireBytes(t, cl, v1.ID, v2.ID)
	protoRemoval(t, cl, names.removal)
	protoTransitive(t, cl, names.transitive, names.against)
}

// protoOrder is what a consumer reads of an OrderPlaced: the three fields both
// versions know, the currency (empty where the reader has no such field),
// and whether the message kept bytes its descriptor does not know.
type protoOrder struct {
	orderID, customerID string
	totalCents          int64
	currency            string
	unknown             bool
}

// protoWireBytes: a producer on v1 and one on v2 frame their messages as
// Confluent's serializers do (a zero byte, the schema id in four bytes, the
// message-index array, a single 0 for the first message, then the message);
// a consumer holding v1 and one holding v2 read both. The old reader skips
// the new field (keeping it as unknown bytes); the new reader of old bytes
// sees the field's default, the empty string.
func protoWireBytes(t *testing.T, cl *sr.Client, id1, id2 int) {
	message := func(text string) protoreflect.MessageDescriptor {
		d, err := protobuf.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return d.Descriptor().Messages().Get(0)
	}
	encode := func(id int, md protoreflect.MessageDescriptor, values map[string]protoreflect.Value) []byte {
		m := dynamicpb.NewMessage(md)
		for name, v := range values {
			m.Set(md.Fields().ByName(protoreflect.Name(name)), v)
		}
		body, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var h sr.ConfluentHeader
		b, err := h.AppendEncode(nil, id, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, body...)
	}
	decode := func(reader string, framed []byte) protoOrder {
		var h sr.ConfluentHeader
		id, rest, err := h.DecodeID(framed)
		if err != nil {
			t.Fatal(err)
		}
		index, body, err := h.DecodeIndex(rest, 1)
		if err != nil || len(index) != 1 || index[0] != 0 {
			t.Fatalf("message index %v, %v; want [0]", index, err)
		}
		// The writer's schema is fetched by id and names the message the
		// index points at, as a Confluent deserializer checks.
		writer, err := cl.SchemaByID(ctx(t), id)
		if err != nil || writer.Type != sr.TypeProtobuf {
			t.Fatalf("SchemaByID(%d) = %+v, %v", id, writer, err)
		}
		rd := message(reader)
		if wd := message(writer.Schema); wd.FullName() != rd.FullName() {
			t.Fatalf("writer %d holds %s, the reader %s", id, wd.FullName(), rd.FullName())
		}
		m := dynamicpb.NewMessage(rd)
		if err := proto.Unmarshal(body, m); err != nil {
			t.Fatal(err)
		}
		get := func(name string) protoreflect.Value {
			if f := rd.Fields().ByName(protoreflect.Name(name)); f != nil {
				return m.Get(f)
			}
			return protoreflect.ValueOfString("")
		}
		return protoOrder{get("order_id").String(), get("customer_id").String(), get("total_cents").Int(), get("currency").String(), len(m.GetUnknown()) > 0}
	}
	str, i64 := protoreflect.ValueOfString, protoreflect.ValueOfInt64
	oldBytes := encode(id1, message(protoV1), map[string]protoreflect.Value{"order_id": str("ord_1"), "customer_id": str("cus_9"), "total_cents": i64(4200)})
	newBytes := encode(id2, message(protoV2), map[string]protoreflect.Value{"order_id": str("ord_2"), "customer_id": str("cus_9"), "total_cents": i64(1500), "currency": str("USD")})
	if oldBytes[0] != 0 || oldBytes[5] != 0 || len(oldBytes) != 6+17 {
		t.Errorf("v1 message: % x; want a zero byte, the id, the index 0 and 17 bytes of Protobuf", oldBytes)
	}
	if got := decode(protoV1, newBytes); got != (protoOrder{"ord_2", "cus_9", 1500, "", true}) {
		t.Errorf("old reader, new bytes: %+v; want the currency skipped, kept as unknown bytes", got)
	}
	if got := decode(protoV2, oldBytes); got != (protoOrder{"ord_1", "cus_9", 4200, "", false}) {
		t.Errorf("new reader, old bytes: %+v; want the currency's default, empty", got)
	}
	if got := decode(protoV2, newBytes); got != (protoOrder{"ord_2", "cus_9", 1500, "USD", false}) {
		t.Errorf("new reader, new bytes: %+v", got)
	}
}

// protoRemoval: a field's removal passes BACKWARD, FORWARD and FULL, as in
// Confluent; a oneof member's fails BACKWARD and FULL and passes FORWARD.
func protoRemoval(t *testing.T, cl *sr.Client, subject string) {
	withPay := func(members string) string {
		return "syntax = \"proto3\";\nmessage Payment {\n  string id = 1;\n  string note = 2;\n  oneof method {" + members + "}\n}\n"
	}
	first := withPay(" string card = 3; string iban = 4; ")
	for _, tc := range []struct {
		name, subject, doc string
		level              sr.CompatibilityLevel
		is                 bool
	}{
		{"field removed", subject, strings.Replace(first, "  string note = 2;\n", "", 1), sr.CompatBackward, true},
		{"field removed", subject, strings.Replace(first, "  string note = 2;\n", "", 1), sr.CompatForward, true},
		{"field removed", subject, strings.Replace(first, "  string note = 2;\n", "", 1), sr.CompatFull, true},
		{"oneof member removed", subject, withPay(" string card = 3; "), sr.CompatBackward, false},
		{"oneof member removed", subject, withPay(" string card = 3; "), sr.CompatForward, true},
		{"oneof member removed", subject, withPay(" string card = 3; "), sr.CompatFull, false},
	} {
		if _, err := cl.CreateSchema(ctx(t), tc.subject, protoSchema(first)); err != nil {
			t.Fatal(err)
		}
		for _, r := range cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: tc.level}, tc.subject) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), tc.subject, -1, protoSchema(tc.doc))
		if err != nil || res.Is != tc.is {
			t.Errorf("%s under %s: %+v, %v; want compatible %v", tc.name, tc.level, res, err, tc.is)
		}
		if !tc.is && !strings.Contains(strings.Join(res.Messages, " "), "ONEOF_FIELD_REMOVED") {
			t.Errorf("%s under %s: messages %v do not name ONEOF_FIELD_REMOVED", tc.name, tc.level, res.Messages)
		}
	}
}

// protoTransitive: v2 drops field 4, v3 brings 4 back as another type. v3
// reads v2's data but not v1's: BACKWARD accepts it, BACKWARD_TRANSITIVE
// refuses it naming revision 1.
func protoTransitive(t *testing.T, cl *sr.Client, subject, against string) {
	with := func(f string) string {
		return "syntax = \"proto3\";\nmessage T {\n  string a = 1;\n" + f + "}\n"
	}
	for _, doc := range []string{with("  string channel = 4;\n"), with("")} {
		if _, err := cl.CreateSchema(ctx(t), subject, protoSchema(doc)); err != nil {
			t.Fatal(err)
		}
	}
	third := protoSchema(with("  int64 channel = 4;\n"))
	if res, err := cl.CheckCompatibility(ctx(t), subject, -1, third); err != nil || !res.Is {
		t.Errorf("under BACKWARD: %+v, %v; want compatible (the latest has no field 4)", res, err)
	}
	cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatBackwardTransitive}, subject)
	_, err := cl.CreateSchema(ctx(t), subject, third)
	wantCode(t, "under BACKWARD_TRANSITIVE", err, 409, "FIELD_SCALAR_KIND_CHANGED", "#/T/4", against)
}
