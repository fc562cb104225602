// Package console is a web console for sqlstreams, mountable as an http.Handler.
package console
