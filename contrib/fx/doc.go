// Package sqlstreamsfx wires a sqlstreams client with uber-go/fx.
//
// Nothing touches the database in fx.New: constructors only make handles
// and append lifecycle hooks. On app.Start, in hook order, the client opens
// (sqlstreams.Open, which migrates), each producer is registered, and each
// consumer registers its member and starts Run; a failure there (an
// unreachable database, ErrIncompatibleSchema, ErrGroupVersion) fails
// app.Start. So Module provides *Client and Producer provides *ProducerOf[T]:
// handles whose Get returns the client and the producer from the start on.
// Take the handle in a constructor and call Get in an OnStart hook, a
// handler or a request.
//
// On app.Stop the first consumer hook tells every consumer of the app to
// stop, and each hook waits for its own Run: running handlers finish (for
// up to ShutdownTimeout) and their acks are written. N consumers thus stop
// within one ShutdownTimeout, not N. The client closes after them, and
// OTel's middleware after the client.
//
// Open, NewProducer and NewRunner do the same without fx.
package sqlstreamsfx
