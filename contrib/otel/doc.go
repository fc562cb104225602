// Package otelsqlstreams traces produce and claim with OpenTelemetry.
package otelsqlstreams
