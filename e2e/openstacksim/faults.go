package openstacksim

import (
	"cmp"
	"encoding/json"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Call is one logged request. Bodies are not kept: tokens requests carry
// passwords and server creates carry cloud-init secrets.
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault); a Status
// without Body answers a Keystone-style error body.
type Fault = simkit.Fault

func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody:  "503 Service Unavailable", // the API load balancer with no backend
		ErrorBody: func(status int) string { return errBody(keystoneErr(status, "injected fault")) },
	})
}

// FailCall makes the next count requests (0: all until ClearFaults) with
// method and path prefix (e.g. "POST", "/network/v2.0/ports") answer
// status with an error body in the format of the service the path names.
func (s *Server) FailCall(method, pathPrefix string, status, count int) {
	typ := cmp.Or(map[int]string{409: "Conflict", 400: "BadRequest", 404: "NotFound"}[status], "HTTPInternalServerError")
	body := errBody(serviceErr(pathPrefix, status, typ, "injected fault"))
	s.AddFault(Fault{Method: method, PathPrefix: pathPrefix, Status: status, Body: body, Count: count})
}

// errBody is e's body as sent.
func errBody(e *apiErr) string {
	if str, ok := e.Body.(string); ok {
		return str
	}
	b, _ := json.Marshal(e.Body)
	return string(b)
}

// DefaultBootFault is the fault message of a server an error rule fails,
// Nova's when the scheduler finds no host.
const DefaultBootFault = "No valid host was found. There are not enough hosts available."

// ServerErrorRule makes the servers called Name ("": every server) go
// ERROR instead of ACTIVE when they boot, without running OnBoot, with
// Message (default DefaultBootFault) as their fault.
type ServerErrorRule struct {
	Name    string
	Message string
}

// FailServers adds an error rule.
func (s *Server) FailServers(rule ServerErrorRule) {
	rule.Message = cmp.Or(rule.Message, DefaultBootFault)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.serverRules = append(s.st.serverRules, rule)
}

// matchErrorRule returns the fault message of the first rule picking sv.
func (s *Server) matchErrorRule(sv *Instance) string {
	for _, rl := range s.st.serverRules {
		if rl.Name == "" || rl.Name == sv.Name {
			return rl.Message
		}
	}
	return ""
}
