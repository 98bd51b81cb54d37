package keycloaksim

import "github.com/sitebus/sitebus/e2e/simkit"

// Call is one logged request. Bodies are not kept: token requests carry
// passwords.
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault); a Status
// without Body answers Keycloak's {"error":"unknown_error"}.
type Fault = simkit.Fault

// newFaults is the call log and fault registry with Keycloak's bodies; it
// keeps no request bodies.
func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody:  "Service Unavailable", // Keycloak behind a proxy while it restarts
		ErrorBody: func(int) string { return `{"error":"unknown_error"}` },
	})
}
