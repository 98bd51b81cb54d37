package harness

import (
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// KeycloakUsers are the Keycloak users matching the fixture's team members
// (Member): their usernames are the offering usernames.
var KeycloakUsers = []keycloaksim.User{
	{ID: "11111111-1111-4111-8111-111111111111", Username: "alice01", Email: "alice@acme.example"},
	{ID: "22222222-2222-4222-8222-222222222222", Username: "bob01", Email: "bob@acme.example"},
	{ID: "33333333-3333-4333-8333-333333333333", Username: "carol01", Email: "carol@acme.example"},
}

// TerminalTransitions lists, per order (UUID without dashes), the
// set_state_done and set_state_erred calls in a Waldur simulator's call
// log, each as "<action>→<status>": exactly one per order is what "each
// order settled once" means.
func TerminalTransitions(calls []waldursim.Call) map[string][]string {
	out := map[string][]string{}
	for _, c := range calls {
		parts := strings.Split(strings.Trim(c.Path, "/"), "/") // api marketplace-orders <uuid> <action>
		if len(parts) == 4 && parts[1] == "marketplace-orders" && (parts[3] == "set_state_done" || parts[3] == "set_state_erred") {
			id := strings.ReplaceAll(parts[2], "-", "")
			out[id] = append(out[id], fmt.Sprintf("%s→%d", parts[3], c.Status))
		}
	}
	return out
}
