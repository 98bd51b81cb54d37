package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/vmboot"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/vault/vaulttest"
)

// The rancher-cluster offering: managed clusters built on the OpenStack
// simulator, whose VMs run their cloud-init (e2e/vmboot) and register with
// the Rancher simulator.
const (
	clusterOfferingUUID = "c0a1b2c3d4e54f6a8b7c6d5e4f3a2b1d"
	clusterOfferingName = "Rancher clusters"
	clusterZoneUUID     = "f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0f9"
	clusterExtNetworkID = "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b"
	clusterImage        = "SLE Micro 6.1"
	clusterOSPassword   = "sim-admin-password"
	// clusterEvery is how many demo ticks come per cluster step; the first
	// tick makes a cluster, so one shows up right away.
	clusterEvery = 12
)

// clusters is the rancher-cluster side of the site.
type clusters struct {
	os *openstacksim.Server
	// vaultURL and vaultToken are "" when Vault is not in the cache: the
	// nodes' user_data then carries the registration token itself.
	vaultURL, vaultToken string
	// current is the demo cluster last created ("" before the first).
	currentOrder, currentResource string
}

// clusterOffering is the rancher-cluster offering; its usage components
// are what the reporting backend measures.
func clusterOffering() waldursim.Offering {
	return waldursim.Offering{UUID: clusterOfferingUUID, Name: clusterOfferingName, Type: "Marketplace.Basic",
		Components: components(map[string]any{"billing_type": "usage"},
			"nodes", "Nodes", "nodes", "cpu", "CPU", "cores", "ram", "RAM", "GB", "storage", "Storage", "GB")}
}

// startClusters serves the OpenStack simulator (one zone; booting VMs
// register with the Rancher simulator) and, when the binary is cached, a
// Vault dev server for the nodes' registration tokens.
func (s *site) startClusters(ctx context.Context, o options, log *slog.Logger, cleanup *stack) error {
	c := &clusters{}
	if err := c.startVault(ctx, o, log, cleanup); err != nil {
		return err
	}
	register := vmboot.RancherSim(nil)
	osim, err := openstacksim.New(openstacksim.Options{
		AdminPassword:     clusterOSPassword,
		AvailabilityZones: []string{"nova"},
		Flavors: []openstacksim.Flavor{
			{ID: "f-small", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
			{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
			{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
		},
		Images:          []openstacksim.Image{{ID: "5b0c1a2e-0000-4000-8000-000000000001", Name: clusterImage}},
		ExternalNetwork: openstacksim.ExternalNetwork{Name: "public", CIDR: "172.24.4.0/24", NetworkID: clusterExtNetworkID},
		OnBoot: func(ctx context.Context, v openstacksim.Instance) error {
			if strings.HasPrefix(v.Name, "k8s-lb-") {
				return nil // the load balancer runs no RKE2
			}
			return vmboot.Boot(ctx, v.UserData, v.Name, register)
		},
	})
	if err != nil {
		return err
	}
	if err := serve(osim, "OpenStack", o.osListen, log, cleanup); err != nil {
		return err
	}
	c.os = osim
	s.clusters = c
	return nil
}

// startVault runs a Vault dev server on -vault-listen if the binary is in
// the cache; building it takes long, so without it the offering runs
// without Vault and the log says how to get it.
func (c *clusters) startVault(ctx context.Context, o options, log *slog.Logger, cleanup *stack) error {
	bin, err := vaulttest.Binary()
	if err != nil {
		log.Info("Vault not found: the rancher-cluster offering runs without it (registration tokens in user_data); `make vault` builds it once", "reason", err)
		return nil
	}
	home, err := os.MkdirTemp("", "sitebus-dev-vault-")
	if err != nil {
		return fmt.Errorf("vault home: %w", err)
	}
	cleanup.push(func() { _ = os.RemoveAll(home) })
	token := vaulttest.RandomToken()
	// -dev-no-store-token and a scratch HOME: nothing lands in the
	// developer's home. Its log is noise next to sitebus's; it is dropped.
	p, err := harness.StartProcessTee("vault", bin, vaulttest.DevArgs(o.vaultListen, token), []string{"HOME=" + home}, io.Discard)
	if err != nil {
		return fmt.Errorf("start Vault: %w", err)
	}
	cleanup.push(func() {
		log.Info("stopping Vault")
		_ = p.Stop(10 * time.Second)
	})
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Another Vault on the address would answer the health check and
	// then refuse our root token: the hint names the flag either way.
	const hint = "(another Vault or process on -vault-listen? choose another address)"
	if err := vaulttest.WaitHealthy(wctx, o.vaultListen, p.Exited); err != nil {
		return fmt.Errorf("%w %s\n%s", err, hint, p.Tail(20))
	}
	if err := vaulttest.EnableAppRole(wctx, vaulttest.Settings(o.vaultListen, token)); err != nil {
		return fmt.Errorf("vault on %s: %w %s", o.vaultListen, err, hint)
	}
	c.vaultURL, c.vaultToken = "http://"+o.vaultListen, token
	log.Info("Vault dev server ready", "addr", c.vaultURL)
	return nil
}

// clusterOfferingYAML is the rancher-cluster offering's entry in the
// sitebus config: managed clusters in the one zone of the OpenStack
// simulator, Rancher and Keycloak the simulators the Rancher offering uses.
func (s *site) clusterOfferingYAML() string {
	ro := s.rancher.Options()
	return harness.ClusterOffering{
		Name:      "local-clusters",
		WaldurURL: s.cfg.WaldurURL, Token: s.cfg.Token, OfferingUUID: clusterOfferingUUID,
		WebSTOMPAddr: s.cfg.WebSTOMPAddr, WebSTOMPPath: s.cfg.WebSTOMPPath,
		RancherURL: s.rancher.URL(), RancherAccessKey: ro.AccessKey, RancherSecretKey: ro.SecretKey,
		Image:        clusterImage,
		Server:       harness.ClusterNodeProfile{Flavor: "m1.large", SystemGB: 40, DataGB: 40},
		Worker:       harness.ClusterNodeProfile{SystemGB: 20},
		LoadBalancer: harness.ClusterNodeProfile{Flavor: "m1.small", SystemGB: 20},
		VaultURL:     s.clusters.vaultURL, VaultToken: s.clusters.vaultToken,
		KeycloakURL: s.keycloakURL,
		Zones: []harness.ClusterZone{{
			UUID: clusterZoneUUID, Slug: "nova", Name: "Zone nova", AvailabilityZone: "nova",
			ExternalNetworkID: clusterExtNetworkID, AuthURL: s.clusters.os.AuthURL(), Password: clusterOSPassword,
		}},
	}.YAML()
}

// demoCluster is one cluster step of the demo: a small managed cluster (one
// zone, one worker) is created, and the one before it terminated once its
// create has finished, so the simulators hold at most two at a time.
func (s *site) demoCluster(ctx context.Context, admin *waldursim.AdminClient, n int, log *slog.Logger) {
	c := s.clusters
	if c.currentOrder != "" {
		o, err := admin.Order(ctx, c.currentOrder)
		if failed(ctx, log, "demo cluster", err) {
			return
		}
		if o.State != "done" && o.State != "erred" {
			log.Info("demo cluster still being created; the next one waits", "resource", o.ResourceName, "state", o.State)
			return
		}
		// An erred create may have left VMs behind: terminate cleans up
		// whatever exists.
		res, err := admin.CreateOrder(ctx, waldursim.CreateOrderRequest{
			OfferingUUID: clusterOfferingUUID, Type: "Terminate", ResourceUUID: c.currentResource,
		})
		if failed(ctx, log, "demo cluster terminate", err) {
			return
		}
		log.Info("demo cluster terminate order created", "order", res.Order.UUID, "resource", o.ResourceName)
		c.currentOrder, c.currentResource = "", ""
	}
	name := fmt.Sprintf("demo-cluster-%d", n)
	res, err := admin.CreateOrder(ctx, waldursim.CreateOrderRequest{
		OfferingUUID: clusterOfferingUUID,
		ResourceName: name,
		Attributes: map[string]any{
			"name": name, "worker_nodes_count": 1, "worker_nodes_flavor_name": "m1.medium",
			"worker_nodes_data_volume_size": 20480, "openstack_offering_uuid_list": []any{clusterZoneUUID},
		},
	})
	if failed(ctx, log, "demo cluster", err) {
		return
	}
	c.currentOrder, c.currentResource = res.Order.UUID, res.Resource.UUID
	log.Info("demo cluster order created", "order", res.Order.UUID, "resource", name, "frames", len(res.Published))
}
