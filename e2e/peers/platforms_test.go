package peers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/vault/vaulttest"
)

func TestMain(m *testing.M) { os.Exit(kube.SharedRunner(m).Run()) }

// The platforms sitebus provisions on, misbehaving as the table says, each
// in a test of its own so that one whose server cannot run here (the
// Kubernetes API server, Vault) skips alone.

// OpenShift: the OKD simulator in front of a real API server.
func TestMisbehavingOpenShiftFailsBoundedClassifiedAndLeakFree(t *testing.T) {
	runMisbehaviours(t, func(t *testing.T, bound time.Duration) []*peer { return []*peer{okdPeer(t, bound)} })
}

// OpenStack: its simulator, reached through gophercloud.
func TestMisbehavingOpenStackFailsBoundedClassifiedAndLeakFree(t *testing.T) {
	runMisbehaviours(t, func(t *testing.T, bound time.Duration) []*peer { return []*peer{openstackPeer(t, bound)} })
}

// Vault: a real dev server behind a faulting proxy (there is no simulator).
func TestMisbehavingVaultFailsBoundedClassifiedAndLeakFree(t *testing.T) {
	v := vaulttest.Start(t)
	runMisbehaviours(t, func(t *testing.T, bound time.Duration) []*peer { return []*peer{vaultPeer(t, v, bound)} })
}

func okdPeer(t *testing.T, bound time.Duration) *peer {
	sim, url, conns := serveSim(t, okdsim.New, okdsim.Options{Kube: kube.Shared(t).RESTConfig(), Logger: quiet})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(sim.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := okd.DecodeSettings(map[string]any{"api_url": url,
		"token_config": map[string]any{"token_type": "file", "token_file_path": tokenFile}})
	if err != nil {
		t.Fatal(err)
	}
	idle := &idleCloser{}
	be, err := okd.New(s, nil, okd.Options{Logger: quiet, WrapTransport: idle.wrap})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "OpenShift", faults: sim.Faults, prefix: "/api", conns: conns, idle: idle,
		secrets: []string{sim.Token()},
		call: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			ok, err := be.Exists(ctx, "misbehaving-peer")
			if err == nil {
				return fmt.Errorf("no error, and the project exists: %v", ok)
			}
			return err
		}}
}

func openstackPeer(t *testing.T, bound time.Duration) *peer {
	sim, url, conns := serveSim(t, openstacksim.New, openstacksim.Options{Logger: quiet})
	o := sim.Options()
	idle := &idleCloser{}
	hc := &http.Client{Transport: idle.wrap(http.DefaultTransport.(*http.Transport).Clone())}
	c, err := openstack.Connect(t.Context(), openstack.Config{HTTPClient: hc, RequestTimeout: bound, Logger: quiet,
		Cloud: openstack.Cloud{AuthURL: url + "/identity/v3", Username: o.AdminUser, Password: config.Secret(o.AdminPassword),
			UserDomainName: "Default", ProjectName: o.AdminProject, ProjectDomainName: "Default",
			RegionName: openstacksim.DefaultRegion, Verify: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "OpenStack", faults: sim.Faults, prefix: "/compute/", conns: conns, idle: idle,
		secrets: []string{o.AdminPassword},
		call: func(ctx context.Context) error {
			s, err := c.GetServer(ctx, "6a1b9c2d-0000-4000-8000-000000000001")
			if err == nil && s.ID == "" {
				return errors.New("no error, and a server with no id")
			}
			return err
		}}
}

// vaultPeer is a real Vault dev server behind a reverse proxy that
// injects the faults: Vault has no simulator.
func vaultPeer(t *testing.T, v *vaulttest.Server, bound time.Duration) *peer {
	target, err := url.Parse("http://" + v.Addr)
	if err != nil {
		t.Fatal(err)
	}
	faults := simkit.NewFaults(simkit.FaultOptions{
		DownBody:  "503 Service Unavailable",
		ErrorBody: func(int) string { return `{"errors":["injected fault"]}` },
	})
	proxyTransport := http.DefaultTransport.(*http.Transport).Clone()
	proxy := &httputil.ReverseProxy{Transport: proxyTransport, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	t.Cleanup(proxyTransport.CloseIdleConnections)
	addr, conns := serve(t, faults.Middleware(proxy))
	s := vaulttest.Settings(addr[len("http://"):], v.RootToken)
	c, err := vault.New(s)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := vault.ParseCluster("3c2b1a09-8f7e-4d6c-9b5a-493827160f5e")
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "vault", faults: faults, prefix: "/v1/", conns: conns,
		idle:    &idleCloser{also: func() { c.CloseIdleConnections(); proxyTransport.CloseIdleConnections() }},
		secrets: []string{v.RootToken},
		call: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			_, err := c.RoleID(ctx, cl)
			return err
		}}
}
