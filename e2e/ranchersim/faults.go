package ranchersim

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Call is one logged request. Bodies are kept (the API key is in the
// Authorization header, which is not logged; the only credentials in
// bodies are the test registry secrets' and the registration tokens of
// node registrations), except of /k8s/ requests, whose bodies stream
// through.
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault).
// QueryContains tells apart requests that share a path, e.g.
// "action=importYaml" from GET cluster; a Status without Body answers a
// Rancher error body.
type Fault = simkit.Fault

// newFaults is the call log and fault registry with Rancher's bodies.
func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody: "503 Service Temporarily Unavailable", // Rancher's ingress while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"baseType":"error","type":"error","status":%d,"code":"ServerError","message":"injected fault"}`, status)
		},
		KeepBody: func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/k8s/") },
	})
}
