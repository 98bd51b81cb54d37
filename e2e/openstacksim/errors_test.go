package openstacksim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestErrorBodies checks the error formats clients parse: Keystone's (also
// keystonemiddleware's 401 in front of every service), Neutron's and
// Nova's.
func TestErrorBodies(t *testing.T) {
	sim, p, c := simWithTenant(t, "errbody")
	tok := c.provider.Token()
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		want                            string // a JSON path: outer key, then inner key with a non-empty value
	}{
		{"missing token", "GET", "/network/v2.0/networks", "", "", 401, "error.message"},
		{"keystone 404", "GET", "/identity/v3/projects/nope", tok, "", 404, "error.title"},
		{"neutron 404", "GET", "/network/v2.0/networks/nope", tok, "", 404, "NeutronError.type"},
		{"neutron 404 for a network named in a body", "POST", "/network/v2.0/subnets", tok, `{"subnet":{"network_id":"nope"}}`, 404, "NeutronError.message"},
		{"nova 404", "GET", "/compute/v2.1/servers/nope", tok, "", 404, "itemNotFound.message"},
		{"nova 400", "POST", "/compute/v2.1/servers", tok, `{"server":{"name":"x","flavorRef":"nope"}}`, 400, "badRequest.message"},
		{"cinder 404", "GET", "/volume/v3/" + p.ID + "/volumes/nope", tok, "", 404, "itemNotFound.message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctxT(t), tc.method, sim.URL()+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("X-Auth-Token", tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			var body map[string]map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			outer, inner, _ := strings.Cut(tc.want, ".")
			if v, _ := body[outer][inner].(string); v == "" {
				t.Fatalf("no %s in %s", tc.want, raw)
			}
		})
	}
}
