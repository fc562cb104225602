// Package sqlstreamsfx wires a sqlstreams client with uber-go/fx.
package sqlstreamsfx
