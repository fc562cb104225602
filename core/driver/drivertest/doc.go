// Package drivertest holds fixtures that a driver's own tests share with
// every other driver's: data shaped to reach each branch a driver may take,
// with the answer core/driver gives for it. It imports the standard library
// and core/driver only, so a driver module can use it without requiring the
// conformance module (which proves the contracts through the public API and
// runs from a test-only module that requires the drivers, not the reverse).
package drivertest
