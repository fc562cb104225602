package driver

// Engines is a driver's table of the engines that speak its wire protocol:
// Served is the name of those it serves, Refused those Migrate refuses
// (EngineOf); Prefix and Unsupported make a refusal's error
// (Engine.Refused).
type Engines struct {
	Served      string
	Prefix      string
	Unsupported error
	Refused     []Engine
}

// Of tells from the server's version text which engine answers.
func (es Engines) Of(version string) Engine { return EngineOf(version, es.Served, es.Refused...) }

// Refuse is Migrate's refusal of the engine that answers, nil if served.
func (es Engines) Refuse(version string) error {
	return es.Of(version).Refused(es.Prefix, es.Unsupported)
}
