package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// site is the simulated Waldur side (a scratch RabbitMQ node and the
// simulator publishing to it) and the platforms: a local Kubernetes
// control plane, the Keycloak simulator and the Rancher simulator.
type site struct {
	broker *rabbitmq.Broker
	sim    *waldursim.Server
	fx     *waldursim.Fixture
	cfg    harness.SiteConfig
	// kubeconfig of the local control plane ("" when not started).
	kubeconfig string
	// demoResource is the first demo order's resource; the demo flips its flags.
	demoResource string
	// keycloakURL of the Keycloak simulator ("" when not started).
	keycloakURL string
	cluster     *kube.Cluster
	// rancher is nil when not started (-rancher=false, -only stomp-bridge).
	rancher *ranchersim.Server
	// clusters is nil when the rancher-cluster offering is not served.
	clusters *clusters
	// vclusters is nil when the vcluster offering is not served.
	vclusters *vclusters
}

func startSite(ctx context.Context, o options, log *slog.Logger, cleanup *stack) (*site, error) {
	if err := rabbitmq.Available(); err != nil {
		return nil, fmt.Errorf("the local site needs RabbitMQ: %w\n"+
			"  install it with `make deps` (or apt-get install rabbitmq-server),\n"+
			"  or pass -config with a config for a real Waldur", err)
	}
	fx, err := harness.LoadFixture()
	if err != nil {
		return nil, err
	}
	platforms := o.only != "stomp-bridge"
	withRancher := o.rancher && platforms
	if withRancher {
		if err := addOffering(fx, rancherOffering()); err != nil {
			return nil, err
		}
	}
	// Clusters register with the Rancher simulator: no Rancher, no clusters.
	withClusters := withRancher && o.clusters
	if withClusters {
		if err := addOffering(fx, clusterOffering()); err != nil {
			return nil, err
		}
	}
	// Virtual clusters are imported into the Rancher simulator: no
	// Rancher, no virtual clusters.
	withVClusters := withRancher && o.vclusters
	if withVClusters {
		if err := addVClusterOffering(fx); err != nil {
			return nil, err
		}
	}
	log.Info("starting RabbitMQ (takes a few seconds)")
	broker, err := rabbitmq.Start(ctx, rabbitmq.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start RabbitMQ: %w", err)
	}
	cleanup.push(func() {
		log.Info("stopping RabbitMQ")
		if err := broker.Stop(); err != nil {
			log.Warn("stop RabbitMQ", "err", err)
		}
	})
	sim, err := harness.StartSimulator(o.simListen, fx, broker, log)
	if err != nil {
		return nil, err
	}
	cleanup.push(func() {
		log.Info("stopping the Waldur simulator")
		_ = sim.Close()
	})
	cfg, err := harness.FixtureSite(fx, sim, broker)
	if err != nil {
		return nil, err
	}
	// A membership backend adds the resource and user_role subscriptions,
	// so the demo's resource changes show up too.
	cfg.MembershipBackend = "k8s-ut-namespace"
	s := &site{broker: broker, sim: sim, fx: fx, cfg: cfg}
	if platforms {
		if err := s.startKubernetes(ctx, log, cleanup); err != nil {
			return nil, err
		}
		if err := s.startKeycloak(o, log, cleanup); err != nil {
			return nil, err
		}
	}
	if withRancher {
		if err := s.startRancher(o, s.cluster, log, cleanup); err != nil {
			return nil, err
		}
	}
	if withClusters {
		if err := s.startClusters(ctx, o, log, cleanup); err != nil {
			return nil, err
		}
	}
	if withVClusters {
		if err := s.startVClusters(ctx, log, cleanup); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// startKeycloak serves the Keycloak simulator with the fixture team's
// offering users, so demo namespaces get their access groups and members.
func (s *site) startKeycloak(o options, log *slog.Logger, cleanup *stack) error {
	kc, err := keycloaksim.New(keycloaksim.Config{Realms: []keycloaksim.Realm{{Name: "waldur", Users: keycloaksim.OfferingUsers(s.fx)}}, Logger: log})
	if err != nil {
		return err
	}
	if err := serve(kc, "Keycloak", o.keycloakListen, log, cleanup); err != nil {
		return err
	}
	s.cfg.KeycloakURL = kc.URL()
	s.keycloakURL = kc.URL()
	return nil
}

// startKubernetes runs a local control plane (etcd, kube-apiserver,
// kube-controller-manager) with the ManagedNamespace CRD, so the order and
// quota services have a platform to drive.
func (s *site) startKubernetes(ctx context.Context, log *slog.Logger, cleanup *stack) error {
	if err := kube.Available(); err != nil {
		return fmt.Errorf("the order and quota services need a Kubernetes API server: %w\n"+
			"  build it once with `make k8s-binaries`, or run only the bridge with -only stomp-bridge", err)
	}
	log.Info("starting a local Kubernetes control plane (a few seconds)")
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		return fmt.Errorf("start Kubernetes: %w", err)
	}
	cleanup.push(func() {
		log.Info("stopping Kubernetes")
		_ = cluster.Stop()
	})
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	if err := cluster.ApplyFile(ctx, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml")); err != nil {
		return err
	}
	if err := cluster.ApplyYAML(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: waldur-system}\n")); err != nil {
		return err
	}
	s.cfg.Kubeconfig, s.cfg.CRNamespace = cluster.Kubeconfig, "waldur-system"
	s.kubeconfig = cluster.Kubeconfig
	s.cluster = cluster
	return nil
}

// writeConfig writes the sitebus config into dir.
func (s *site) writeConfig(dir string) (string, error) {
	path := filepath.Join(dir, "config.yaml")
	cfg, err := s.configYAML()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("write sitebus config: %w", err)
	}
	return path, nil
}

// flagEvery is how many demo orders come per resource flag change.
const flagEvery = 3

// demo keeps events flowing: an order every interval (alternating between
// the namespaces and the Rancher offering when Rancher runs; every
// clusterEvery-th, from the first, a cluster step instead; the
// vclusterTick-th orders the virtual cluster) and, every
// flagEvery-th time, a paused or downscaled toggle on a fixture resource.
func (s *site) demo(ctx context.Context, every time.Duration, log *slog.Logger) {
	admin := s.sim.Admin()
	var paused, downscaled bool
	simkit.Every(ctx, every, func(n int) {
		switch {
		case s.clusters != nil && n%clusterEvery == 1:
			s.demoCluster(ctx, admin, n, log)
		case s.vclusters != nil && n == vclusterTick:
			s.demoVCluster(ctx, admin, log)
		default:
			s.demoOrder(ctx, admin, n, log)
		}
		if n%flagEvery != 0 || len(s.fx.Resources) == 0 {
			return
		}
		req := waldursim.FlagsRequest{}
		if (n/flagEvery)%2 == 1 {
			paused = !paused
			req.Paused = &paused
		} else {
			downscaled = !downscaled
			req.Downscaled = &downscaled
		}
		s.demoFlags(ctx, admin, req, log)
	})
}

func (s *site) demoOrder(ctx context.Context, admin *waldursim.AdminClient, n int, log *slog.Logger) {
	req := waldursim.CreateOrderRequest{
		OfferingUUID: s.fx.Offerings[0].UUID,
		ResourceName: fmt.Sprintf("demo-%d", n),
		Limits:       map[string]int{"cpu": 1, "ram": 2},
	}
	if s.rancher != nil && n%2 == 0 {
		req.OfferingUUID = rancherOfferingUUID
		req.Limits = map[string]int{"cpu": 2, "ram": 4, "storage": 10, "gpu": 1}
	}
	res, err := admin.CreateOrder(ctx, req)
	if failed(ctx, log, "demo order", err) {
		return
	}
	log.Info("demo order created", "order", res.Order.UUID, "resource", res.Resource.Name,
		"offering", res.Order.OfferingName, "frames", len(res.Published))
	s.demoTeam(ctx, admin, res.Resource.UUID, log)
	// The flag flips target a ManagedNamespace resource (kubectl shows them).
	if s.demoResource == "" && req.OfferingUUID == s.fx.Offerings[0].UUID {
		s.demoResource = res.Resource.UUID
	}
}

// demoTeam gives the resource the fixture's first team, so its access
// groups get members.
func (s *site) demoTeam(ctx context.Context, admin *waldursim.AdminClient, resourceUUID string, log *slog.Logger) {
	if len(s.fx.Resources) == 0 {
		return
	}
	for _, m := range s.fx.Resources[0].Team {
		_, err := admin.SetTeam(ctx, waldursim.TeamRequest{ResourceUUID: resourceUUID, Member: m, Granted: true})
		failed(ctx, log, "demo team", err)
	}
}

func (s *site) demoFlags(ctx context.Context, admin *waldursim.AdminClient, req waldursim.FlagsRequest, log *slog.Logger) {
	// Flip the first demo resource: sitebus created its namespace, so the
	// quota changes are visible with kubectl.
	target := s.fx.Resources[0].UUID
	if s.demoResource != "" {
		target = s.demoResource
	}
	out, err := admin.SetFlags(ctx, target, req)
	if failed(ctx, log, "demo resource change", err) {
		return
	}
	log.Info("demo resource changed", "resource", out.Resource.Name, "paused", out.Resource.Paused,
		"downscaled", out.Resource.Downscaled, "frames", len(out.Published))
}

func printBanner(o options, s *site, bin, cfgPath, dataDir string) {
	nats := "nats://" + o.natsListen
	cli := relToCwd(bin)
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("")
	line("──────────────────────────── sitebus local site ────────────────────────────")
	if s != nil {
		line("  Waldur simulator  %s/api/   (admin API: %s/sim/)", s.sim.URL(), s.sim.URL())
		line("  RabbitMQ          %s   management %s (%s / %s)", s.broker.WebSTOMPURL(), s.broker.MgmtURL(), s.broker.AdminUser, s.broker.AdminPass)
		if o.demoInterval > 0 {
			line("  demo              an order every %s, a resource change every %s", o.demoInterval, flagEvery*o.demoInterval)
		}
		if s.keycloakURL != "" {
			line("  Keycloak sim      %s   (realm waldur; admin/admin in master)", s.keycloakURL)
		}
		if s.kubeconfig != "" {
			line("  Kubernetes        kubectl --kubeconfig %s get managednamespaces -n waldur-system", s.kubeconfig)
		}
		if s.rancher != nil {
			line("  Rancher sim       %s/v3   (cluster %s; offering %s)", s.rancher.URL(), s.rancher.Options().ClusterID, rancherOfferingUUID)
			line("                    curl -s %s/sim/projects   (and /sim/bindings, /sim/imports)", s.rancher.URL())
			line("                    kubectl --kubeconfig %s get ns -l gpu-pool -L gpu-pool; ... get resourcequota -A", s.kubeconfig)
		}
		if c := s.clusters; c != nil {
			line("  OpenStack sim     %s   (offering %s: a cluster every %s)", c.os.AuthURL(), clusterOfferingUUID, clusterEvery*o.demoInterval)
			line("                    curl -s %s/sim/inventory   (provisioned clusters, nodes, tokens)", s.rancher.URL())
			if c.vaultURL != "" {
				line("  Vault (dev)       %s   (root token in the config)", c.vaultURL)
			} else {
				line("  Vault             not running: `make vault` builds it once; tokens are in user_data")
			}
		}
		if v := s.vclusters; v != nil {
			line("  virtual cluster   kubectl --kubeconfig %s get deploy -n cattle-system   (offering %s: %s%s, imported into Rancher)",
				v.virt.KubeconfigPath(), vclusterOfferingUUID, vcluster.NamespacePrefix, vclusterDemoName)
			line("                    kubectl --kubeconfig %s get ns,resourcequota -l %s -A", s.kubeconfig, vcluster.LabelManaged)
		}
	}
	line("  sitebus           http://%s/metrics  /readyz  /healthz", o.httpAddr)
	line("  NATS (embedded)   %s", nats)
	line("  config            %s", cfgPath)
	line("  data              %s", dataDir)
	line("")
	line("  try:")
	if s != nil {
		line("    curl -XPOST %s/sim/orders -d '{\"offering_uuid\": \"%s\"}'", s.sim.URL(), s.fx.Offerings[0].UUID)
		if s.rancher != nil {
			line("    curl -XPOST %s/sim/orders -d '{\"offering_uuid\": \"%s\", \"limits\": {\"cpu\": 2, \"gpu\": 1}}'", s.sim.URL(), rancherOfferingUUID)
		}
	}
	line("    %s dlq list --nats-url %s", cli, nats)
	line("    %s replay --subject 'waldur.*.order' --since 10m --dry-run --nats-url %s", cli, nats)
	line("  Ctrl-C stops everything. The event stream follows ([events]).")
	line("─────────────────────────────────────────────────────────────────────────────")
	fmt.Fprint(os.Stderr, b.String())
}

// relToCwd shortens a path below the working directory (bin/sitebus).
func relToCwd(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// failed logs a demo step's error unless ctx has ended (a call cut short
// by the shutdown is no failure) and says whether there was one.
func failed(ctx context.Context, log *slog.Logger, what string, err error) bool {
	if err != nil && ctx.Err() == nil {
		log.Warn(what, "err", err)
	}
	return err != nil
}
