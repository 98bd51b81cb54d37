package harness

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// errRecorder is a testing.TB that records Errorf instead of failing.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestConfiguredSecretsAreFoundAndGreppedFor(t *testing.T) {
	cfg := `offerings:
  - name: a
    waldur_api_url: http://127.0.0.1:1/api/
    waldur_api_token: ${E2E_TOKEN}
    waldur_offering_uuid: 7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8
    backend_type: k8s-ut-namespace
    backend_settings:
      keycloak: {keycloak_password: kc-pass-0123456, keycloak_username: admin}
  - name: b
    waldur_api_url: http://127.0.0.1:1/api/
    oidc_token_url: http://127.0.0.1:1/token
    oidc_client_id: sitebus
    oidc_client_secret: oidc-secret-0123
    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d
    backend_type: k8s-ut-namespace
    backend_settings:
      keycloak: {keycloak_password: admin}
`
	got := configuredSecrets(cfg, []string{"E2E_TOKEN=tok-from-env-0123"})
	want := []string{"tok-from-env-0123", "kc-pass-0123456", "oidc-secret-0123"}
	if !slices.Equal(got, want) {
		t.Fatalf("secrets %q, want %q (short ones such as admin are not grepped for)", got, want)
	}

	p := &Process{Name: "sitebus", out: &syncBuffer{}}
	_, _ = p.out.Write([]byte("level=INFO msg=started\nlevel=ERROR msg=\"login failed\" token=tok-from-env-0123\n"))
	rec := &errRecorder{TB: t}
	checkNoSecrets(rec, p, got)
	if len(rec.errs) != 1 || strings.Contains(rec.errs[0], "tok-from-env-0123") || !strings.Contains(rec.errs[0], "token=<SECRET>") {
		t.Fatalf("errors %q", rec.errs)
	}
}
