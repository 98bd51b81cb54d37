package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/app"
	"github.com/sitebus/sitebus/services/stompbridge"
)

// checkResult is one diagnostic: what was checked, whether it works, what
// was found and, when it does not work, how to fix it.
type checkResult struct {
	Offering string `json:"offering,omitempty"`
	Check    string `json:"check"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
	Fix      string `json:"fix,omitempty"`
}

func pass(check, format string, args ...any) checkResult {
	return checkResult{Check: check, OK: true, Detail: fmt.Sprintf(format, args...)}
}

func fail(check, fix, format string, args ...any) checkResult {
	return checkResult{Check: check, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

// diagOptions are the diagnostics flags.
type diagOptions struct {
	natsURL, dataDir string
	// timeout bounds each check.
	timeout time.Duration
}

func diagnosticsCmd() *cobra.Command {
	var path, output string
	var o diagOptions
	c := &cobra.Command{
		Use:   "diagnostics -c CONFIG",
		Short: "Check Waldur, NATS, STOMP, the backends and Keycloak for every offering; exit 1 if any check fails",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: want text or json", output)
			}
			// The parsers run uses: a file it refuses is reported as such.
			plan, err := app.LoadPlan(path)
			if err != nil {
				return err
			}
			results := runDiagnostics(cmd.Context(), plan, o)
			red := newRedactor(plan)
			for i := range results {
				results[i].Detail, results[i].Fix = red.clean(results[i].Detail), red.clean(results[i].Fix)
			}
			failed := 0
			for _, r := range results {
				if !r.OK {
					failed++
				}
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"ok": failed == 0, "checks": results}); err != nil {
					return err
				}
			} else {
				printResults(out, results)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d checks failed", failed, len(results))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	f.StringVar(&o.natsURL, "nats-url", "", "external NATS server or cluster, as for run (default: the file's nats_url)")
	f.StringVar(&o.dataDir, "data-dir", "", "directory for the embedded server's JetStream store, as for run")
	f.DurationVar(&o.timeout, "timeout", 15*time.Second, "bound of each check")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	return c
}

// runDiagnostics runs the NATS checks and, concurrently, every offering's
// checks; results come in a fixed order (NATS, then offerings as in the file).
func runDiagnostics(ctx context.Context, plan *app.Plan, o diagOptions) []checkResult {
	if o.natsURL != "" {
		plan.Config.Sitebus.NATSURL = o.natsURL
	}
	if o.dataDir != "" {
		plan.Config.Sitebus.DataDir = o.dataDir
	}
	parts := make([][]checkResult, len(plan.Offerings)+1)
	var wg sync.WaitGroup
	wg.Go(func() { parts[0] = natsChecks(ctx, plan, o.timeout) })
	for i := range plan.Offerings {
		wg.Go(func() {
			op := &plan.Offerings[i]
			rs := offeringChecks(ctx, plan, op, o.timeout)
			label := fmt.Sprintf("%s (%s)", op.Config.Name, op.Config.OfferingUUIDHex())
			for j := range rs {
				rs[j].Offering = label
			}
			parts[i+1] = rs
		})
	}
	wg.Wait()
	return slices.Concat(parts...)
}

// offeringChecks runs an offering's groups of checks (Waldur, STOMP, each
// backend, Keycloak) at once; within a group a check that others depend on
// comes first.
func offeringChecks(ctx context.Context, plan *app.Plan, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	groups := []func() []checkResult{
		func() []checkResult { return waldurChecks(ctx, op, timeout) },
		func() []checkResult { return stompChecks(ctx, plan, op, timeout) },
		func() []checkResult { return backendChecks(ctx, op, timeout) },
		func() []checkResult { return keycloakChecks(ctx, op, timeout) },
	}
	parts := make([][]checkResult, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { parts[i] = g() })
	}
	wg.Wait()
	return slices.Concat(parts...)
}

// diagWaldur is a Waldur client that tries once per call: a check reports
// what Waldur said, it does not wait through retries.
func diagWaldur(op *app.OfferingPlan, timeout time.Duration) (*waldur.Client, error) {
	cfg := op.Waldur
	cfg.Timeout = timeout
	cfg.Retry = waldur.RetryPolicy{MaxAttempts: 1}
	cfg.Logger = slog.New(slog.DiscardHandler)
	return waldur.New(cfg)
}

func waldurChecks(ctx context.Context, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	o := op.Config
	c, err := diagWaldur(op, timeout)
	if err != nil {
		return []checkResult{fail("waldur api", "fix waldur_api_url and the token or oidc_* keys", "%v", err)}
	}
	var out []checkResult
	step := func(f func(ctx context.Context) checkResult) bool {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r := f(cctx)
		out = append(out, r)
		return r.OK
	}
	apiURL := c.BaseURL() + "/api/"
	ok := step(func(ctx context.Context) checkResult {
		v, err := c.Version(ctx)
		if err != nil {
			if st := waldur.StatusCode(err); st != 0 {
				return fail("waldur api", "waldur_api_url must be the API root (https://waldur.example.com/api/)",
					"%s answered %d, not Waldur's version: %v", apiURL+"version/", st, err)
			}
			return fail("waldur api", "check waldur_api_url, that this host reaches it (firewall, global_proxy) and verify_ssl",
				"Waldur at %s did not answer: %v", apiURL, err)
		}
		return pass("waldur api", "Waldur %s answers at %s", v.Version, apiURL)
	})
	if !ok {
		return out
	}
	ok = step(func(ctx context.Context) checkResult {
		me, err := c.Me(ctx, "uuid", "username")
		if err != nil {
			fix := "check waldur_api_token: it is wrong, revoked or expired (Waldur: user menu, API token)"
			if o.WaldurAPIToken.Reveal() == "" {
				fix = "check oidc_token_url, oidc_client_id and oidc_client_secret"
			}
			if st := waldur.StatusCode(err); st == http.StatusUnauthorized || st == http.StatusForbidden {
				return fail("waldur token", fix, "Waldur refused the token (%d %s)", st, http.StatusText(st))
			}
			return fail("waldur token", fix, "could not authenticate: %v", err)
		}
		return pass("waldur token", "token accepted: user %s (%s)", me.Username, me.UUID)
	})
	if !ok {
		return out
	}
	ok = step(func(ctx context.Context) checkResult {
		off, err := c.GetOffering(ctx, o.WaldurOfferingUUID, "uuid", "name", "state", "customer_name", "components")
		if err != nil {
			if st := waldur.StatusCode(err); st == http.StatusNotFound || st == http.StatusForbidden {
				return fail("waldur offering", "check waldur_offering_uuid, and that the token's user is an owner or service manager of the offering's provider",
					"offering %s is not visible to this user (%d)", o.WaldurOfferingUUID, st)
			}
			return fail("waldur offering", "see the Waldur checks above; retry when Waldur answers", "could not read offering %s: %v", o.WaldurOfferingUUID, err)
		}
		return pass("waldur offering", "offering %q of %s, state %s, %d component(s) (sitebus load-components pushes backend_components)",
			off.Name, off.CustomerName, off.State, len(off.Components))
	})
	if !ok {
		return out
	}
	step(func(ctx context.Context) checkResult {
		name := "agent-" + o.WaldurOfferingUUID
		ids, err := c.ListAgentIdentities(ctx, name)
		if err != nil {
			return fail("agent identity", "the token's user must be allowed to manage the offering's site agent identities",
				"could not list agent identities: %v", err)
		}
		for _, id := range ids {
			if id.Name == name {
				when := "never"
				if id.LastRestarted != nil {
					when = id.LastRestarted.UTC().Format(time.RFC3339)
				}
				return pass("agent identity", "identity %s registered (%s), version %s, last restarted %s", name, id.UUID, orDash(id.Version), when)
			}
		}
		return pass("agent identity", "no identity %s yet: sitebus run registers it at start", name)
	})
	return out
}

// stompChecks checks the broker the way the bridge reaches it. The login
// is an event subscription's UUID with the Waldur token as passcode, so it
// can be checked once the user has a subscription.
func stompChecks(ctx context.Context, plan *app.Plan, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	o := op.Config
	if !o.StompEnabled {
		return nil
	}
	ep := stompbridge.EndpointFor(plan.Config.Sitebus.Stomp, o)
	where := fmt.Sprintf("%s (transport %s)", ep, ep.Transport)
	fixReach := "check stomp_ws_host, stomp_ws_port, stomp_ws_path and websocket_use_tls, and that this host reaches the broker"
	if ep.Transport == "tcp" {
		fixReach = "check sitebus.stomp.tcp_host and tcp_port (or stomp_ws_host), and that this host reaches the broker's STOMP listener"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := diagWaldur(op, timeout)
	if err != nil {
		return []checkResult{fail("stomp", "see the Waldur checks", "%v", err)}
	}
	subs, err := c.ListEventSubscriptions(ctx)
	if err != nil {
		return []checkResult{fail("stomp", "fix the Waldur checks first: the broker login comes from Waldur",
			"could not list the token's event subscriptions: %v", err)}
	}
	if len(subs) == 0 {
		if err := stompbridge.Reach(ctx, ep); err != nil {
			return []checkResult{fail("stomp", fixReach, "broker not reachable at %s: %v", where, err)}
		}
		return []checkResult{pass("stomp", "broker reachable at %s; login not checked: this user has no event subscription yet (sitebus run registers them)", where)}
	}
	latest := subs[0]
	for _, s := range subs[1:] {
		if s.Created != nil && (latest.Created == nil || s.Created.After(*latest.Created)) {
			latest = s
		}
	}
	cred := stompbridge.Credentials{Vhost: events.HexUUID(latest.UserUUID), Login: events.HexUUID(latest.UUID), Passcode: o.WaldurAPIToken.Reveal()}
	err = stompbridge.Probe(ctx, ep, cred)
	var pe *stompbridge.ProbeError
	switch {
	case err == nil:
		return []checkResult{pass("stomp", "logged in at %s as subscription %s on vhost %s", where, cred.Login, cred.Vhost)}
	case errors.As(err, &pe) && pe.Login:
		return []checkResult{fail("stomp", "the broker's passcode is waldur_api_token: check it, and that the subscription still exists in Waldur",
			"the broker at %s refused login %s on vhost %s: %v", where, cred.Login, cred.Vhost, err)}
	default:
		return []checkResult{fail("stomp", fixReach, "broker not reachable at %s: %v", where, err)}
	}
}

// backendNames are the distinct backends the offering's modes use.
func backendNames(o *app.OfferingPlan) []string {
	var out []string
	for _, n := range []string{o.Config.OrderProcessingBackend, o.Config.MembershipSyncBackend, o.Config.ReportingBackend} {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func backendChecks(ctx context.Context, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	names := backendNames(op)
	if len(names) == 0 {
		return []checkResult{pass("backend", "no order_processing_backend, membership_sync_backend or reporting_backend: no backend to check")}
	}
	var out []checkResult
	for _, name := range names {
		check := "backend " + name
		if name == ranchercluster.Type {
			// No backend.Backend: the sagas reach Rancher, OpenStack and Vault.
			out = append(out, clusterChecks(ctx, op, timeout)...)
			continue
		}
		b, err := op.NewBackend(name, app.BackendOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			out = append(out, fail(check, "fix backend_settings", "%v", err))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err = b.Ping(cctx)
		cancel()
		if err != nil {
			out = append(out, fail(check, backendFix(op, name, err), "%v", err))
			continue
		}
		cctx, cancel = context.WithTimeout(ctx, timeout)
		d, err := b.Diagnostics(cctx)
		cancel()
		if err != nil {
			out = append(out, fail(check, backendFix(op, name, err), "%v", err))
			continue
		}
		out = append(out, backendReport(check, op, name, d))
	}
	return out
}

// backendFix says what to change for a backend that does not answer.
func backendFix(op *app.OfferingPlan, name string, err error) string {
	switch name {
	case rancher.Type:
		var ae *rancher.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
			return fmt.Sprintf("check backend_settings.username (the access key %s) and password (its secret key): the key may be wrong, expired or lack access to cluster %s",
				op.Rancher.Username, op.Rancher.ClusterID)
		}
		if errors.Is(err, backend.ErrNotFound) {
			return fmt.Sprintf("check backend_settings.cluster_id (%s): Rancher has no such cluster", op.Rancher.ClusterID)
		}
		return "check backend_settings.backend_url and verify_cert, and that this host reaches Rancher"
	case managedns.Type:
		kube := op.ManagedNS.KubeconfigPath
		if kube == "" {
			kube = "the in-cluster service account"
		}
		return fmt.Sprintf("check backend_settings.kubeconfig_path (using %s) and that the API server answers", kube)
	}
	return "check backend_settings"
}

// backendReport turns a backend's Diagnostics into a check: the facts an
// operator needs, and a failure when the platform answers but sitebus
// could not work there (no CRD, no right to list).
func backendReport(check string, op *app.OfferingPlan, name string, d map[string]any) checkResult {
	if e, ok := d["list_error"]; ok {
		fix := "grant the account sitebus uses the right to list its objects"
		if name == managedns.Type {
			fix = fmt.Sprintf("grant list on managednamespaces in %s (deploy/kubernetes/rbac.yaml)", op.ManagedNS.CRNamespace)
		}
		return fail(check, fix, "the platform answers, but listing sitebus's objects failed: %v", e)
	}
	if installed, ok := d["crd_installed"].(bool); ok && !installed {
		return fail(check, "install the ManagedNamespace CRD (deploy/crds/) or the operator that provides it",
			"the API server does not serve managednamespaces.provisioning.hpc.ut.ee/v1")
	}
	keys := []string{"server_version", "cr_namespace", "managed_namespaces", "cluster_id", "cluster_name", "cluster_state", "managed_projects", "access_key", "backend_url"}
	var facts []string
	for _, k := range keys {
		if v, ok := d[k]; ok {
			facts = append(facts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return pass(check, "answers: %s", strings.Join(facts, " "))
}

// keycloakChecks logs in with the configured client and reads the realm.
func keycloakChecks(ctx context.Context, op *app.OfferingPlan, timeout time.Duration) []checkResult {
	// op.Rancher.Keycloak is set only as op.Keycloak (app.Plan).
	kcp := op.Keycloak
	if kcp == nil {
		return nil
	}
	cfg := *kcp
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxAttempts, cfg.Timeout = 1, timeout
	cfg = cfg.WithDefaults()
	where := redactURL(cfg.URL)
	kc, err := keycloak.New(cfg)
	if err != nil {
		return []checkResult{fail("keycloak token", "fix backend_settings.keycloak", "%v", err)}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = kc.Ping(cctx)
	if err == nil {
		return []checkResult{
			pass("keycloak token", "logged in at %s as %q with client %q (realm %s)", where, cfg.Username, cfg.ClientID, cfg.UserRealm),
			pass("keycloak realm", "realm %q answers", cfg.Realm),
		}
	}
	var ke *keycloak.Error
	login := errors.As(err, &ke) && ke.Op == "log in"
	switch {
	case errors.Is(err, keycloak.ErrCredentials):
		return []checkResult{fail("keycloak token", "check backend_settings.keycloak: keycloak_username, keycloak_password, client_id and keycloak_user_realm",
			"Keycloak at %s refused the login of %q with client %q in realm %s: %v", where, cfg.Username, cfg.ClientID, cfg.UserRealm, err)}
	case login || (ke == nil && !errors.As(err, &ke)):
		return []checkResult{fail("keycloak token", "check backend_settings.keycloak.keycloak_url (with /auth/ for Keycloak before 17), keycloak_ssl_verify, and that this host reaches Keycloak",
			"Keycloak at %s did not give a token: %v", where, err)}
	}
	tok := pass("keycloak token", "logged in at %s as %q with client %q (realm %s)", where, cfg.Username, cfg.ClientID, cfg.UserRealm)
	fix := "check backend_settings.keycloak.keycloak_realm, and that the admin user may manage users and groups there"
	if errors.Is(err, keycloak.ErrNotFound) {
		fix = "check backend_settings.keycloak.keycloak_realm: Keycloak has no such realm"
	}
	return []checkResult{tok, fail("keycloak realm", fix, "realm %q: %v", cfg.Realm, err)}
}

// natsChecks checks the NATS sitebus run would use: the embedded server's
// store, or the external server, its JetStream and the replica count.
func natsChecks(ctx context.Context, plan *app.Plan, timeout time.Duration) []checkResult {
	cfg := plan.Config
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []checkResult
	if cfg.Sitebus.NATSURL == "" {
		dir := filepath.Join(cfg.Sitebus.DataDir, "jetstream")
		if err := writable(dir); err != nil {
			out = append(out, fail("nats", fmt.Sprintf("make %s writable by this user, or set sitebus.data_dir (or --data-dir)", dir),
				"embedded NATS cannot store JetStream data in %s: %v", dir, err))
		} else {
			out = append(out, pass("nats", "embedded NATS server: JetStream store %s is writable", dir))
		}
	} else {
		where := redactURL(cfg.Sitebus.NATSURL)
		nc, err := nats.Connect(cfg.Sitebus.NATSURL, nats.Name("sitebus-diagnostics"), nats.Timeout(timeout), nats.NoReconnect())
		if err != nil {
			return []checkResult{fail("nats", "check --nats-url (or sitebus.nats_url) and that the server is up", "cannot connect to NATS at %s: %v", where, err)}
		}
		defer nc.Close()
		js, err := nc.JetStream(nats.Context(ctx))
		if err == nil {
			var info *nats.AccountInfo
			if info, err = js.AccountInfo(nats.Context(ctx)); err == nil {
				out = append(out, pass("nats", "NATS %s at %s, JetStream on (%d streams)", nc.ConnectedServerVersion(), where, info.Streams))
			}
		}
		if err != nil {
			return append(out, fail("nats jetstream", "enable JetStream on the NATS servers (jetstream {} in nats.conf, see deploy/nats)",
				"NATS at %s answers but JetStream does not: %v", where, err))
		}
	}
	note, err := app.CheckReplicas(ctx, cfg)
	if err != nil {
		return append(out, fail("nats replicas", "set sitebus.streams.replicas to at most the number of JetStream servers", "%v", err))
	}
	return append(out, pass("nats replicas", "%s", note))
}

// writable creates dir if needed and a file in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".sitebus-diagnostics-*")
	if err != nil {
		return err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return err
	}
	return os.Remove(name)
}

func printResults(w io.Writer, results []checkResult) {
	group := "\x00"
	failed := 0
	for _, r := range results {
		if r.Offering != group {
			group = r.Offering
			if group == "" {
				fmt.Fprintln(w, "sitebus")
			} else {
				fmt.Fprintf(w, "offering %s\n", group)
			}
		}
		mark := "ok  "
		if !r.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, r.Check, r.Detail)
		if r.Fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", r.Fix)
		}
	}
	fmt.Fprintf(w, "%d checks: %d passed, %d failed\n", len(results), len(results)-failed, failed)
}

// redactor removes every secret of the configuration from what is printed,
// whatever a client put in an error message.
type redactor struct{ secrets []string }

func newRedactor(plan *app.Plan) redactor {
	set := map[string]bool{}
	for _, op := range plan.Offerings {
		o := op.Config
		for _, s := range []config.Secret{o.WaldurAPIToken, o.OIDCClientSecret, op.Rancher.Password,
			op.OKD.Token, op.OKD.OAuth.ClientSecret, op.OKD.OAuth.RefreshToken, op.VCluster.Password} {
			set[s.Reveal()] = true
		}
		for _, sec := range clusterSecrets(&op.RancherCluster) {
			set[sec] = true
		}
		// op.Rancher.Keycloak is op.Keycloak when set (app.Plan).
		if op.Keycloak != nil {
			set[op.Keycloak.Password.Reveal()] = true
		}
	}
	delete(set, "")
	// Longest first, so a secret containing another is removed whole.
	secrets := slices.SortedFunc(maps.Keys(set), func(a, b string) int { return len(b) - len(a) })
	return redactor{secrets: secrets}
}

func (r redactor) clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}
