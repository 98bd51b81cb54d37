package main

import (
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// The Rancher offering is added to the fixture here, not in fixture.yaml:
// the simulator picks "the only offering" for orders that name none, and
// the end-to-end tests rely on that.
const (
	rancherOfferingUUID = "e7a1b2c3d4e54f6a8b7c6d5e4f3a2b1c"
	rancherOfferingName = "Rancher projects"
	// rancherProjectPrefix keeps Rancher's namespaces apart from the
	// ManagedNamespace ones in the shared cluster.
	rancherProjectPrefix = "rancher-"
	rancherDefaultRole   = "workloads-manage"
)

// rancherOffering is the Rancher offering, with monthly limits.
func rancherOffering() waldursim.Offering {
	return waldursim.Offering{UUID: rancherOfferingUUID, Name: rancherOfferingName, Type: "Marketplace.Slurm",
		Components: components(map[string]any{"billing_type": "limit", "limit_period": "month"},
			"cpu", "CPU", "cores", "ram", "RAM", "GB", "storage", "Storage", "GB", "gpu", "GPU", "units"),
		PluginOptions: map[string]any{"enable_membership_sync_status": true}}
}

// addOffering adds off to fx, sold by the customer of the fixture's first
// offering.
func addOffering(fx *waldursim.Fixture, off waldursim.Offering) error {
	if len(fx.Offerings) == 0 {
		return fmt.Errorf("fixture has no offering to take the customer from")
	}
	off.CustomerUUID = fx.Offerings[0].CustomerUUID
	fx.Offerings = append(fx.Offerings, off)
	return nil
}

// components are offering components, each of fields and a type, name and
// measured unit from specs (three strings a component).
func components(fields map[string]any, specs ...string) []map[string]any {
	var out []map[string]any
	for i := 0; i+2 < len(specs); i += 3 {
		c := maps.Clone(fields)
		c["type"], c["name"], c["measured_unit"] = specs[i], specs[i+1], specs[i+2]
		out = append(out, c)
	}
	return out
}

// startRancher serves the Rancher simulator in front of the local cluster,
// so Rancher namespaces and quotas are real objects there.
func (s *site) startRancher(o options, cluster *kube.Cluster, log *slog.Logger, cleanup *stack) error {
	rs, err := ranchersim.New(ranchersim.Options{Kube: cluster.RESTConfig(), Logger: log})
	if err != nil {
		return err
	}
	if err := serve(rs, "Rancher", o.rancherListen, log, cleanup); err != nil {
		return err
	}
	s.rancher = rs
	return nil
}

// rancherOfferingYAML is the Rancher offering's entry in the sitebus
// config: every backend role is rancher, Keycloak is the same simulator
// as the namespaces offering's.
func (s *site) rancherOfferingYAML() string {
	ro := s.rancher.Options()
	host, port, _ := strings.Cut(s.cfg.WebSTOMPAddr, ":")
	var kc string
	if s.keycloakURL != "" {
		kc = fmt.Sprintf("      keycloak_enabled: true\n      keycloak_use_user_id: false\n"+
			"      keycloak: {keycloak_url: %q, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: admin}\n",
			strings.TrimRight(s.keycloakURL, "/")+"/")
	}
	return fmt.Sprintf(`  - name: local-rancher
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: rancher
    order_processing_backend: rancher
    membership_sync_backend: rancher
    reporting_backend: rancher
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings:
      backend_url: %s
      username: %s
      password: %s
      cluster_id: %s
      project_prefix: %s
      default_role: %s
      namespace_labels: {gpu-pool: h100-2x}
%s    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {type: ram, measured_unit: GB, accounting_type: limit, label: RAM}
      storage: {type: storage, measured_unit: GB, accounting_type: limit, label: Storage}
      gpu: {type: gpu, measured_unit: units, accounting_type: limit, label: GPU}
`, strings.TrimRight(s.cfg.WaldurURL, "/"), s.cfg.Token, rancherOfferingUUID, host, port, s.cfg.WebSTOMPPath,
		s.rancher.URL(), ro.AccessKey, ro.SecretKey, ro.ClusterID, rancherProjectPrefix, rancherDefaultRole, kc)
}

// configYAML is the harness's one-offering config with the Rancher
// offering appended to its offerings list (which ends where the sitebus
// block starts).
func (s *site) configYAML() (string, error) {
	base := s.cfg.YAML()
	if s.rancher == nil {
		return base, nil
	}
	const tail = "\nsitebus:\n"
	i := strings.Index(base, tail)
	if i < 0 {
		return "", fmt.Errorf("sitebus-dev: the generated config has no %q block to put the Rancher offering before", "sitebus:")
	}
	offerings := s.rancherOfferingYAML()
	if s.clusters != nil {
		offerings += s.clusterOfferingYAML()
	}
	if s.vclusters != nil {
		vc, err := s.vclusterOfferingYAML()
		if err != nil {
			return "", err
		}
		offerings += vc
	}
	return base[:i+1] + offerings + base[i+1:], nil
}
