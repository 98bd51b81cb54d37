package okdsim

import (
	"fmt"
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Call is one logged request. Bodies are not kept (token requests carry
// secrets); TokenID names the bearer token sent, valid or not.
type Call struct {
	simkit.Call
	TokenID string
}

// Fault makes matching requests misbehave (see simkit.Fault); a Status
// without Body answers a Kubernetes Status body.
type Fault = simkit.Fault

func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody: "503 Service Unavailable", // the router in front of the API server while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected fault","reason":"InternalError","code":%d}`, status)
		},
		Label: func(r *http.Request) string { return TokenID(bearer(r)) },
	})
}

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call {
	return simkit.Map(s.Faults.Calls(), func(c simkit.Call) Call {
		tok := c.Label
		c.Label = ""
		return Call{Call: c, TokenID: tok}
	})
}
