package conformance

import "fmt"

const envRole = "SQLSTREAMS_CONFORMANCE_ROLE"

func runChild(role string, target Target) int {
	fmt.Println("unknown role", role)
	return 2
}
