package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/services/app"
)

// clusterChecks checks what a rancher-cluster offering's sagas reach:
// Rancher with the API key, each zone's OpenStack (login, catalog, the base
// image, the managed flavors) and Vault when vault_host is set. Zones are
// checked side by side; within one a check the others need comes first.
func clusterChecks(ctx context.Context, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	s := &op.RancherCluster
	parts := make([][]checkResult, len(s.OpenStackOfferings)+2)
	done := make(chan struct{}, len(parts))
	run := func(i int, f func() []checkResult) {
		go func() { parts[i] = f(); done <- struct{}{} }()
	}
	run(0, func() []checkResult { return []checkResult{rancherLogin(ctx, s, timeout)} })
	run(1, func() []checkResult { return vaultChecks(ctx, s, timeout) })
	for i, az := range s.OpenStackOfferings {
		run(i+2, func() []checkResult { return zoneChecks(ctx, s, az, i, timeout) })
	}
	for range parts {
		<-done
	}
	return slices.Concat(parts...)
}

// httpFor is a client that verifies TLS unless told not to, with caFile's
// roots when given.
func httpFor(verify bool, caFile string, timeout time.Duration) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify} //nolint:gosec // the operator's verify setting
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

// get does one GET and returns the status and at most 64 KiB of the body.
func get(ctx context.Context, hc *http.Client, url string, header func(*http.Request)) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if header != nil {
		header(req)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, body, nil
}

// rancherLogin reads Rancher's /v3 with the API key, as every saga call
// authenticates.
func rancherLogin(ctx context.Context, s *ranchercluster.Settings, timeout time.Duration) checkResult {
	const check = "rancher login"
	hc, err := httpFor(s.VerifyCert, "", timeout)
	if err != nil {
		return fail(check, "fix backend_settings", "%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	where := strings.TrimRight(s.BackendURL, "/") + "/v3"
	code, _, err := get(cctx, hc, where, func(r *http.Request) { r.SetBasicAuth(s.Username, s.Password.Reveal()) })
	switch {
	case err != nil:
		return fail(check, "check backend_settings.backend_url and verify_cert, and that this host reaches Rancher",
			"Rancher at %s did not answer: %v", redactURL(where), err)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fail(check, fmt.Sprintf("check backend_settings.username (the access key %s) and password (its secret key): the key may be wrong, expired or disabled", s.Username),
			"Rancher at %s refused the API key: %d", redactURL(where), code)
	case code != http.StatusOK:
		return fail(check, "backend_settings.backend_url must be Rancher's base URL (https://rancher.example.com)",
			"%s answered %d, not Rancher's API root", redactURL(where), code)
	}
	return pass(check, "Rancher at %s accepts the access key %s", redactURL(where), s.Username)
}

// zoneChecks logs in to one zone (Connect fails unless the catalog has
// compute, network, volumev3 and image), then looks up the base image and
// the flavors the managed profiles name.
func zoneChecks(ctx context.Context, s *ranchercluster.Settings, az ranchercluster.AZ, i int, timeout time.Duration) []checkResult {
	label := az.Label()
	key := fmt.Sprintf("backend_settings.openstack_offering_uuid_list[%d].cloud", i)
	cfg := ranchercluster.OpenStackConfig(s, az)
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.RequestTimeout = timeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := openstack.Connect(cctx, cfg)
	if err != nil {
		var oe *openstack.Error
		fix := fmt.Sprintf("check %s: auth_url, region_name, verify/cacert, and that this host reaches Keystone", key)
		switch {
		case errors.As(err, &oe) && (oe.Status == http.StatusUnauthorized || oe.Status == http.StatusForbidden):
			fix = fmt.Sprintf("check %s: username and password (or the application credential), the domains and project_name", key)
		case strings.Contains(err.Error(), "endpoint in the catalog"):
			fix = fmt.Sprintf("check %s.region_name (and interface): Keystone's catalog must have compute, network, volumev3 and image there", key)
		}
		return []checkResult{fail("openstack "+label, fix, "%v", err)}
	}
	out := []checkResult{pass("openstack "+label, "logged in (project %s); the catalog has compute, network, volumev3 and image", c.ProjectID())}

	cctx2, cancel2 := context.WithTimeout(ctx, timeout)
	defer cancel2()
	if id, err := c.ImageID(cctx2, s.BaseImageName); err != nil {
		out = append(out, fail("image "+label, "upload the image to Glance in this zone, or fix backend_settings.base_image_name",
			"base image %q: %v", s.BaseImageName, err))
	} else {
		out = append(out, pass("image "+label, "base image %q is %s", s.BaseImageName, id))
	}

	var want []string
	for _, n := range []struct{ key, name string }{
		{"managed_rancher_server_flavor_name", s.Server.FlavorName},
		{"managed_rancher_worker_flavor_name", s.Worker.FlavorName},
		{"managed_rancher_load_balancer_flavor_name", s.LoadBalancer.FlavorName},
	} {
		if n.name != "" {
			want = append(want, n.key+"="+n.name)
		}
	}
	if len(want) == 0 {
		return out
	}
	fl, err := c.Flavors(cctx2)
	if err != nil {
		return append(out, fail("flavors "+label, "check that the zone's user may list flavors", "%v", err))
	}
	var missing []string
	for _, w := range want {
		_, name, _ := strings.Cut(w, "=")
		if !slices.ContainsFunc(fl, func(f ranchercluster.Flavor) bool { return f.Name == name }) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return append(out, fail("flavors "+label, "create the flavors in this zone (or make them public), or fix the backend_settings keys named",
			"Nova has no flavor %s", strings.Join(missing, ", ")))
	}
	return append(out, pass("flavors "+label, "%s exist", strings.Join(want, ", ")))
}

// vaultChecks reads Vault's health and the token's own lookup: sealed,
// uninitialised or unreachable Vault, and a wrong or expired token, each
// fail every create at its Vault step.
func vaultChecks(ctx context.Context, s *ranchercluster.Settings, timeout time.Duration) []checkResult {
	if !s.Vault.Enabled() {
		return nil
	}
	addr, err := s.Vault.Address()
	if err != nil {
		return []checkResult{fail("vault", "fix backend_settings.vault_host", "%v", err)}
	}
	hc, err := httpFor(s.Vault.TLSVerify, s.Vault.CAFile, timeout)
	if err != nil {
		return []checkResult{fail("vault", "fix backend_settings.vault_tls_verify or vault_ca_file", "%v", err)}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Standby (429) and performance standby (473) serve reads; the others
	// cannot serve sitebus.
	code, _, err := get(cctx, hc, addr+"/v1/sys/health?standbyok=true&perfstandbyok=true", nil)
	switch {
	case err != nil:
		return []checkResult{fail("vault health", "check backend_settings.vault_host, vault_port and vault_tls_verify, and that this host (and the nodes) reach Vault",
			"Vault at %s did not answer: %v", addr, err)}
	case code == 501:
		return []checkResult{fail("vault health", "initialise Vault (vault operator init)", "Vault at %s is not initialised", addr)}
	case code == 503:
		return []checkResult{fail("vault health", "unseal Vault (vault operator unseal)", "Vault at %s is sealed", addr)}
	case code != http.StatusOK && code != 429 && code != 473:
		return []checkResult{fail("vault health", "backend_settings.vault_host must be Vault's address", "%s/v1/sys/health answered %d", addr, code)}
	}
	out := []checkResult{pass("vault health", "Vault at %s is initialised and unsealed", addr)}
	code, body, err := get(cctx, hc, addr+"/v1/auth/token/lookup-self", func(r *http.Request) { r.Header.Set("X-Vault-Token", s.Vault.Token.Reveal()) })
	switch {
	case err != nil:
		return append(out, fail("vault token", "check that this host reaches Vault", "token lookup at %s: %v", addr, err))
	case code == http.StatusForbidden || code == http.StatusUnauthorized:
		return append(out, fail("vault token", "check backend_settings.vault_token: Vault does not know it (wrong, revoked or expired)",
			"Vault at %s refused the token: %d", addr, code))
	case code != http.StatusOK:
		return append(out, fail("vault token", "check backend_settings.vault_token", "token lookup at %s answered %d", addr, code))
	}
	var v struct {
		Data struct {
			Policies []string `json:"policies"`
			TTL      int      `json:"ttl"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &v) // the facts are for the operator; the 200 is the check
	ttl := "no expiry"
	if v.Data.TTL > 0 {
		ttl = "expires in " + (time.Duration(v.Data.TTL) * time.Second).String()
	}
	return append(out, pass("vault token", "the token is valid (policies %s, %s)", strings.Join(v.Data.Policies, ","), ttl))
}
