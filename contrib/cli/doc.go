// Package sqlstreamscli is the sqlstreams command, embeddable.
package sqlstreamscli
