// Package statuspage tests the operator's status page as a person sees it:
// a real sitebus with a parked saga and a dead letter, the page loaded in
// Debian's headless Chromium, its DOM checked and a screenshot kept.
package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

const (
	kcAdminPassword = "kc-admin-pa55word-for-the-page-test"
	statusToken     = "status-page-t0ken-never-shown"
)

// A Rancher offering whose create order fails at Keycloak (403 on the
// groups) and whose compensation fails at Rancher (403 on deleting the
// project): both are terminal, so the saga parks at once. A frame that is
// not JSON is dead-lettered by the bridge. The page must show both, with
// the offering's health, and none of the configuration's secrets.
func TestStatusPageInChromium(t *testing.T) {
	chromium := requireChromium(t)
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	s := harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...),
		harness.WithSettings(map[string]any{"keycloak_enabled": true}),
		harness.WithSitebusConfig(map[string]any{"status_page": map[string]any{"token": statusToken, "check_period": "10s"}}))

	// Each fault once: the next order goes through and is a recent order.
	s.Keycloak.AddFault(keycloaksim.Fault{Method: "POST", PathPrefix: "/admin/realms/waldur/groups", Status: 403, Body: `{"error":"HTTP 403 Forbidden"}`, Count: 1})
	s.Rancher.AddFault(ranchersim.Fault{Method: "DELETE", PathPrefix: "/v3/projects/", Status: 403, Count: 1,
		Body: `{"type":"error","status":"403","code":"Forbidden","message":"projects is forbidden"}`})
	parkedOrder, _ := s.Create("parks", map[string]int{"cpu": 1}, harness.Member("alice01", "PROJECT.ADMIN"))
	parkedSaga := "order-" + strings.ReplaceAll(parkedOrder, "-", "")
	if _, err := s.Admin.PublishRaw(harness.Context(t, time.Minute), waldursim.RawEventRequest{
		OfferingUUID: s.OfferingHex, ObjectType: "order", Body: "{this is not json", MessageID: "status-page-malformed"}); err != nil {
		t.Fatal(err)
	}
	// The page over plain HTTP until it shows what the test looks for;
	// what Chromium shows is then checked.
	waitPage(t, s, parkedSaga, "compensation of step object failed", "Dead letters (1)", "stomp order", "waldur token")
	doneOrder, _ := s.Create("works", map[string]int{"cpu": 1}, harness.Member("alice01", "PROJECT.ADMIN"))
	s.WaitOrder(doneOrder, "done")
	doneSaga := "order-" + strings.ReplaceAll(doneOrder, "-", "")
	waitPage(t, s, doneSaga, "succeeded")

	url := "http://" + s.Sitebus.HTTPAddr + "/status"
	dom := runChromium(t, chromium, "--dump-dom", url)
	for _, w := range []string{
		parkedSaga, "parked", "compensation of step object failed (not retryable)", "403", // the parked saga and its last error
		doneSaga, "succeeded", "Recent orders (1)", // the order that went through
		"order body is not a JSON object", "stomp-bridge", // the dead letter's reason and source
		"Offering", s.OfferingHex, "stomp order", "connected", "waldur token", "backend rancher", "keycloak token", // health
		`href="/metrics"`,
	} {
		if !strings.Contains(dom, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	for name, secret := range map[string]string{"Waldur token": s.Token, "Keycloak password": kcAdminPassword,
		"status token": statusToken, "Rancher secret key": ranchersim.DefaultSecretKey} {
		if strings.Contains(dom, secret) {
			t.Errorf("the page shows the %s", name)
		}
	}

	// Another process of the site, split off with --only as the chart
	// runs them, holds no STOMP session and no saga, and serves the same
	// facts from NATS. The sagas have all ended or parked, so a second
	// coordinator has nothing to take over.
	other := harness.StartSitebus(t, harness.SitebusOptions{Config: s.Config, NATSURL: s.Sitebus.NATSURL,
		Args: []string{"--only", "saga-coordinator"}, Env: s.Env(), Name: "sitebus-coordinator"})
	code, page := other.Get("/status")
	for _, w := range []string{parkedSaga, doneSaga, "compensation of step object failed", "order body is not a JSON object", "stomp order", "waldur token"} {
		if code != http.StatusOK || !strings.Contains(page, w) {
			t.Errorf("the --only saga-coordinator process's page (%d) lacks %q", code, w)
		}
	}

	dir := artifacts(t)
	if err := os.WriteFile(filepath.Join(dir, "status-page.html"), []byte(dom), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "status-page.png")
	runChromium(t, chromium, "--screenshot="+shot, "--window-size=1280,1600", url)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot of the status page: %s", shot)
	if t.Failed() {
		t.Logf("DOM:\n%s\n%s", dom, s.Sitebus.Tail(40))
	}
}

// waitPage polls the page over plain HTTP until it contains every one of
// want.
func waitPage(t *testing.T, s *harness.Site, want ...string) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, fmt.Sprintf("the page to show %q", want), func() bool {
		code, body := s.Sitebus.Get("/status")
		if code != http.StatusOK {
			return false
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
}

// requireChromium finds Debian's chromium; .ci/deps.sh installs it.
func requireChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		// Ubuntu's and older Debian's name.
		if p, err2 := exec.LookPath("chromium-browser"); err2 == nil {
			return p
		}
	}
	testenv.Require(t, "headless Chromium (Debian package chromium; .ci/deps.sh installs it)", err)
	return path
}

// runChromium runs headless Chromium on one URL with a fresh profile and
// returns what it printed. The flags keep it off the network (no updates,
// sync or QUIC) and let it run as root in a container.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// artifacts is where the screenshot is kept: $SITEBUS_ARTIFACTS (CI sets
// it, see .ci/run) or the test's temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SITEBUS_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
