package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
)

// minSecretLen keeps the check to values distinctive enough to grep for:
// a test password such as "admin" also appears in group and client names.
const minSecretLen = 8

// configuredSecrets returns the credentials a sitebus configuration holds:
// each offering's Waldur token and OIDC client secret (after ${VAR} and
// _file are resolved, with env added to the process environment) and its
// Keycloak password. It returns nil for a file sitebus would not load.
func configuredSecrets(cfg string, env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	lookup := func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	root, err := config.Parse([]byte(cfg), "config.yaml", lookup)
	if err != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	for _, o := range root.Offerings {
		add(o.WaldurAPIToken.Reveal())
		add(o.OIDCClientSecret.Reveal())
		if kc, ok := o.BackendSettings["keycloak"].(map[string]any); ok {
			if pw, ok := kc["keycloak_password"].(string); ok {
				add(pw)
			}
		}
	}
	return out
}

// checkNoSecrets fails the test if p's output shows any of secrets: no log
// line may carry a credential, whatever the test did.
func checkNoSecrets(t testing.TB, p *Process, secrets []string) {
	out := p.Output()
	for _, s := range secrets {
		if i := strings.Index(out, s); i >= 0 {
			start := max(strings.LastIndexByte(out[:i], '\n')+1, 0)
			end := strings.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			line := strings.ReplaceAll(out[start:i+end], s, "<SECRET>")
			t.Errorf("%s logged a configured secret (%d characters):\n%s", p.Name, len(s), line)
		}
	}
}
