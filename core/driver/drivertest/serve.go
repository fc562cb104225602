package drivertest

import (
	"net"
	"testing"
)

// Serve listens on a free local port until the test ends and runs handle,
// in a goroutine of its own, for each connection: the stand-in server of a
// driver's test (a server that quotes a password back, a proxy that cuts a
// connection). It returns the address, host:port.
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed with the test
			}
			go handle(conn)
		}
	}()
	return ln.Addr().String()
}
