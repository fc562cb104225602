package driver_test

import (
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestEngines: a table tells the engine and refuses it as EngineOf and
// Engine.Refused do with its fields.
func TestEngines(t *testing.T) {
	t.Parallel()
	es := driver.Engines{Served: "Full", Prefix: "x: ", Unsupported: errors.ErrUnsupported,
		Refused: []driver.Engine{{Name: "Lite", Marker: "-lite-", Missing: []string{"locks"}, Advice: "use Full"}}}
	if e := es.Of("8.0.1"); e.Name != "Full" || es.Refuse("8.0.1") != nil {
		t.Errorf("8.0.1: %q, %v; want Full served", e.Name, es.Refuse("8.0.1"))
	}
	err := es.Refuse("8.0.1-lite-2")
	if e := es.Of("8.0.1-lite-2"); e.Name != "Lite" || !errors.Is(err, errors.ErrUnsupported) || err.Error() == "" ||
		err.Error() != es.Of("8.0.1-lite-2").Refused("x: ", errors.ErrUnsupported).Error() {
		t.Errorf("8.0.1-lite-2: %q, %v; want Lite refused", e.Name, err)
	}
}
