package app

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
)

// Redactor removes every secret of the configuration from text shown to
// an operator (diagnostics, the status page), whatever a client or a peer
// put in an error message, and the password of any URL in it.
type Redactor struct{ secrets []string }

// NewRedactor knows the secrets of plan: the Waldur tokens, the backends'
// and Keycloak's passwords and tokens, and the status page's token.
func NewRedactor(plan *Plan) Redactor {
	var all []string
	for _, op := range plan.Offerings {
		o := op.Config
		for _, s := range []config.Secret{o.WaldurAPIToken, o.OIDCClientSecret, op.Rancher.Password,
			op.OKD.Token, op.OKD.OAuth.ClientSecret, op.OKD.OAuth.RefreshToken, op.VCluster.Password} {
			all = append(all, s.Reveal())
		}
		all = append(all, clusterSecrets(&op.RancherCluster)...)
		// op.Rancher.Keycloak is op.Keycloak when set (Plan).
		if op.Keycloak != nil {
			all = append(all, op.Keycloak.Password.Reveal())
		}
	}
	if plan.Config != nil {
		all = append(all, plan.Config.Sitebus.StatusPage.Token.Reveal())
	}
	return RedactorOf(all...)
}

// RedactorOf removes the given secrets (empty ones are ignored).
func RedactorOf(secrets ...string) Redactor {
	set := map[string]bool{}
	for _, s := range secrets {
		if s != "" {
			set[s] = true
		}
	}
	// Longest first, so a secret containing another is removed whole.
	return Redactor{secrets: slices.SortedFunc(maps.Keys(set), func(a, b string) int { return len(b) - len(a) })}
}

// urlPassword matches the user:password@ of a URL in free text.
var urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^/\s@]*@`)

// Clean returns s with every secret replaced by [REDACTED] and every URL
// password by xxxxx (what net/url's Redacted writes).
func (r Redactor) Clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return urlPassword.ReplaceAllString(s, "${1}:xxxxx@")
}

// clusterSecrets are a rancher-cluster offering's secrets.
func clusterSecrets(s *ranchercluster.Settings) []string {
	out := []string{s.Password.Reveal(), s.Vault.Token.Reveal(), s.PrivateRegistryPassword.Reveal(), s.ArgoCDKubeconfig.Reveal()}
	for _, az := range s.OpenStackOfferings {
		out = append(out, az.Cloud.Password.Reveal(), az.Cloud.ApplicationCredentialSecret.Reveal())
	}
	return out
}
