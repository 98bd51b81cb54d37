package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/kubernetes"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/vclustersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// The vcluster offering: virtual clusters whose host namespace is on the
// local control plane and which are imported into the Rancher simulator.
// A second control plane plays the one virtual cluster of the demo, with
// the stand-ins of the end-to-end tests for vCluster (its kubeconfig
// Secret) and Rancher's agent (connecting once its objects are applied).
const (
	vclusterOfferingUUID = "b0c1d2e3f4a54b6c8d7e9f0a1b2c3d4e"
	vclusterOfferingName = "Virtual clusters"
	// vclusterDemoName is the demo's one virtual cluster: host namespace
	// and Rancher cluster vc-demo-vcluster.
	vclusterDemoName = "demo-vcluster"
	// vclusterProject is the Rancher project its host namespace goes in.
	vclusterProject = "p-demo"
	// vclusterTick is the demo tick that orders the virtual cluster: the
	// second, after the first (a managed cluster or a namespace).
	vclusterTick = 2
)

// vclusters is the vcluster side of the site.
type vclusters struct {
	virt *kube.Cluster
	// order is the demo create ("" until it is placed).
	order string
}

// addVClusterOffering adds the vcluster offering to fx, sold by the
// customer of the fixture's first offering; its limits become the host
// namespace's quota.
func addVClusterOffering(fx *waldursim.Fixture) error {
	if len(fx.Offerings) == 0 {
		return fmt.Errorf("fixture has no offering to take the customer from")
	}
	limit := func(typ, name, unit string) map[string]any {
		return map[string]any{"type": typ, "name": name, "measured_unit": unit, "billing_type": "limit", "limit_period": "month"}
	}
	fx.Offerings = append(fx.Offerings, waldursim.Offering{
		UUID:         vclusterOfferingUUID,
		Name:         vclusterOfferingName,
		CustomerUUID: fx.Offerings[0].CustomerUUID,
		Type:         "Marketplace.Basic",
		Components:   []map[string]any{limit("cpu", "CPU", "cores"), limit("ram", "RAM", "GB"), limit("storage", "Storage", "GB")},
	})
	return nil
}

// startVClusters runs the second control plane and the two stand-ins:
// the demo's kubeconfig Secret appears once sitebus made its host
// namespace, and every imported vc-* cluster connects once the agent's
// objects are in the virtual cluster.
func (s *site) startVClusters(ctx context.Context, log *slog.Logger, cleanup *stack) error {
	log.Info("starting a second Kubernetes control plane to play the virtual cluster (a few seconds)")
	virt, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		return fmt.Errorf("start the virtual cluster's control plane: %w", err)
	}
	cleanup.push(func() {
		log.Info("stopping the virtual cluster's control plane")
		_ = virt.Stop()
	})
	hostCS, err := kubernetes.NewForConfig(s.cluster.RESTConfig())
	if err != nil {
		return err
	}
	virtCS, err := kubernetes.NewForConfig(virt.RESTConfig())
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(virt.KubeconfigPath())
	if err != nil {
		return fmt.Errorf("the virtual cluster's kubeconfig: %w", err)
	}
	standIns, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		vclustersim.BringKubeconfig(standIns, hostCS, vcluster.NamespacePrefix+vclusterDemoName, raw)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		vclustersim.RunAgent(standIns, s.rancher, virtCS, func(name string) bool { return strings.HasPrefix(name, vcluster.NamespacePrefix) })
	}()
	cleanup.push(func() { cancel(); <-done; <-done })
	s.vclusters = &vclusters{virt: virt}
	return nil
}

// vclusterOfferingYAML is the vcluster offering's entry in the sitebus
// config: the host is the local control plane, known to the Rancher
// simulator as its cluster; with Keycloak, the Waldur team gets access to
// the imported cluster through Keycloak role groups.
func (s *site) vclusterOfferingYAML() (string, error) {
	ro := s.rancher.Options()
	host, port, _ := strings.Cut(s.cfg.WebSTOMPAddr, ":")
	component := func(typ, unit, label string) map[string]any {
		return map[string]any{"type": typ, "measured_unit": unit, "accounting_type": "limit", "label": label}
	}
	settings := map[string]any{
		"host_kubeconfig_path": s.kubeconfig, "host_cluster_id": ro.ClusterID, "rancher_project_id": vclusterProject,
		"backend_url": s.rancher.URL(), "username": ro.AccessKey, "password": ro.SecretKey, "verify_cert": false,
	}
	o := map[string]any{
		"name": "local-vclusters", "waldur_api_url": strings.TrimRight(s.cfg.WaldurURL, "/") + "/api/", "waldur_api_token": s.cfg.Token,
		"waldur_offering_uuid": vclusterOfferingUUID, "backend_type": vcluster.Type, "order_processing_backend": vcluster.Type,
		"reporting_backend": vcluster.Type, "stomp_enabled": true, "websocket_use_tls": false, "stomp_ws_host": host, "stomp_ws_port": port, "stomp_ws_path": s.cfg.WebSTOMPPath,
		"backend_components": map[string]any{"cpu": component("cpu", "cores", "CPU"), "ram": component("ram", "GB", "RAM"),
			"storage": component("storage", "GB", "Storage")},
		"backend_settings": settings,
	}
	if s.keycloakURL != "" {
		o["membership_sync_backend"] = vcluster.Type
		settings["keycloak_enabled"] = true
		settings["keycloak"] = map[string]any{"keycloak_url": strings.TrimRight(s.keycloakURL, "/") + "/", "keycloak_realm": "waldur",
			"keycloak_user_realm": "master", "keycloak_username": "admin", "keycloak_password": "admin"}
	}
	raw, err := yaml.Marshal([]any{o})
	if err != nil {
		return "", err
	}
	// An item of the offerings list, indented under it.
	return "  " + strings.ReplaceAll(strings.TrimRight(string(raw), "\n"), "\n", "\n  ") + "\n", nil
}

// demoVCluster orders the demo's virtual cluster, with the fixture's
// first team, once: there is one virtual cluster to play it.
func (s *site) demoVCluster(ctx context.Context, admin *waldursim.AdminClient, log *slog.Logger) {
	v := s.vclusters
	if v.order != "" {
		return
	}
	res, err := admin.CreateOrder(ctx, waldursim.CreateOrderRequest{
		OfferingUUID: vclusterOfferingUUID,
		ResourceName: vclusterDemoName,
		Limits:       map[string]int{"cpu": 2, "ram": 4, "storage": 10},
		Attributes:   map[string]any{"name": vclusterDemoName},
	})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("demo virtual cluster", "err", err)
		}
		return
	}
	v.order = res.Order.UUID
	log.Info("demo virtual cluster order created", "order", res.Order.UUID, "resource", vclusterDemoName, "frames", len(res.Published))
	s.demoTeam(ctx, admin, res.Resource.UUID, log)
}
