package harness

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/services/app"
)

// Explain runs `sitebus orders explain --json ORDER` against the site's
// configuration, as an operator would, and decodes its answer.
func (s *Site) Explain(t testing.TB, orderUUID string) *app.OrderExplanation {
	t.Helper()
	out, code := s.Command(t, "orders", "explain", "--json", orderUUID)
	if code != 0 {
		t.Fatalf("orders explain %s: exit %d:\n%s", orderUUID, code, out)
	}
	var ex app.OrderExplanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("orders explain %s: %v:\n%s", orderUUID, err, out)
	}
	return &ex
}

// ExplainedChanges are the calls to target an explanation lists as
// changes (not sent), each as "METHOD path body" with the body compacted.
func ExplainedChanges(ex *app.OrderExplanation, target string) []string {
	var out []string
	for _, c := range ex.Calls {
		if c.Target == target && !c.Sent {
			out = append(out, callLine(c.Method, c.Path, c.Body))
		}
	}
	return out
}

// WaldurChanges are the calls of the simulator's log that change
// something (not GET) and name one of uuids in their path, in the same
// form as ExplainedChanges.
func WaldurChanges(calls []waldursim.Call, uuids ...string) []string {
	var out []string
	for _, c := range calls {
		if c.Method == "GET" || c.Method == "HEAD" {
			continue
		}
		for _, u := range uuids {
			if strings.Contains(c.Path, u) {
				out = append(out, callLine(c.Method, c.Path, c.Body))
				break
			}
		}
	}
	return out
}

func callLine(method, path, body string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(body)) == nil {
		body = b.String()
	}
	return strings.TrimSpace(method + " " + path + " " + body)
}
