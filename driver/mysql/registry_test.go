package mysql_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// A schema recorded again, in another stream, uses up no global id: the
// next new schema gets the next id. Inserting before looking would burn an
// auto-increment value on every registration of a known schema.
func TestSchemaIDsStayDense(t *testing.T) {
	drv := mysql.Open(newDatabase(t))
	defer drv.Close()
	reg := openClient(t, drv).Registry()
	one := []byte(`{"type": "object", "properties": {"id": {"type": "string"}}}`)
	two := []byte(`{"type": "object", "properties": {"n": {"type": "integer"}}}`)
	first, err := reg.Register(testCtx(t), "dense-a", 1, one)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"dense-b", "dense-c", "dense-a"} {
		again, err := reg.Register(testCtx(t), stream, 1, one)
		if err != nil || again.ID != first.ID {
			t.Fatalf("the schema again in %s: id %d, %v; want id %d", stream, again.ID, err, first.ID)
		}
	}
	next, err := reg.Register(testCtx(t), "dense-d", 1, two)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID != first.ID+1 {
		t.Errorf("a new schema after the first was recorded again: id %d, want %d", next.ID, first.ID+1)
	}
}
