package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ClusterOffering describes a rancher-cluster offering entry of a sitebus
// configuration: managed (or self-managed) clusters on OpenStack simulator zones, registered
// with a Rancher (simulator), against the Waldur simulator and a RabbitMQ
// Web-STOMP listener (no TLS). The end-to-end tests and sitebus-dev both
// build their offering from it, so the keys the backend reads are written
// in one place.
type ClusterOffering struct {
	// Name is the offering's name in the config file.
	Name string
	// WaldurURL is the simulator's base URL (without /api/).
	WaldurURL    string
	Token        string
	OfferingUUID string
	// WebSTOMPAddr is the broker's Web-STOMP host:port; WebSTOMPPath its path.
	WebSTOMPAddr, WebSTOMPPath string
	// RancherURL, RancherAccessKey and RancherSecretKey log in to Rancher.
	RancherURL, RancherAccessKey, RancherSecretKey string
	// Image is the base image's name in every zone.
	Image string
	// Server, Worker and LoadBalancer are the managed node profiles
	// (managed_rancher_<kind>_*); the worker's flavor and data volume come
	// with each order.
	Server, Worker, LoadBalancer ClusterNodeProfile
	// VaultURL and VaultToken, when VaultURL is set, give the nodes their
	// registration token through Vault; without, it is in their user_data.
	VaultURL, VaultToken string
	// KeycloakURL, when set, enables the cluster's Keycloak groups (realm
	// waldur, admin in master); KeycloakPassword is the admin's, default
	// "admin".
	KeycloakURL, KeycloakPassword string
	// MembershipSync makes rancher-cluster the membership_sync_backend:
	// the membership service puts each resource's team into its cluster's
	// role groups, by RoleMapping (backend_settings.role_mapping) when set.
	MembershipSync bool
	RoleMapping    map[string]string
	// ArgoCDKubeconfig (a kubeconfig, or the absolute path of its file)
	// and ArgoCDNamespace, when set, register each cluster with the ArgoCD
	// of that Kubernetes API (argocd_k8s_kubeconfig, argocd_k8s_namespace).
	ArgoCDKubeconfig, ArgoCDNamespace string
	// SelfManaged makes the offering's deployment_mode self_managed (the
	// order names the nodes, subnets and groups); else managed.
	SelfManaged bool
	// FloatingIPs is allocate_floating_ip_to_all_nodes.
	FloatingIPs bool
	// Zones are the offering's OpenStack zones (at least one).
	Zones []ClusterZone
}

// ClusterNodeProfile is one kind of managed node: a flavor (not for the
// worker) and volume sizes in GB; a zero DataGB leaves the key out.
type ClusterNodeProfile struct {
	Flavor           string
	SystemGB, DataGB int
}

// ClusterZone is one entry of openstack_offering_uuid_list: a Waldur
// offering UUID standing for one availability zone of an OpenStack whose
// admin logs in with Password at AuthURL (domain Default, project admin,
// region RegionOne, as the simulator serves them).
type ClusterZone struct {
	UUID, Slug, Name, AvailabilityZone string
	ExternalNetworkID                  string
	AuthURL, Password                  string
}

// YAML renders the offering as an item of the offerings list (2-space
// indented, starting with "  - name:").
func (c ClusterOffering) YAML() string {
	host, port, _ := strings.Cut(c.WebSTOMPAddr, ":")
	var b strings.Builder
	membership := ""
	if c.MembershipSync {
		membership = "    membership_sync_backend: rancher-cluster\n"
	}
	fmt.Fprintf(&b, `  - name: %q
    waldur_api_url: %q
    waldur_api_token: %q
    waldur_offering_uuid: %q
    backend_type: rancher-cluster
    order_processing_backend: rancher-cluster
    reporting_backend: rancher-cluster
%s    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %q
    stomp_ws_port: %s
    stomp_ws_path: %q
    backend_settings:
      backend_url: %q
      username: %q
      password: %q
      base_image_name: %q
      deployment_mode: %s
`, c.Name, strings.TrimRight(c.WaldurURL, "/")+"/api/", c.Token, c.OfferingUUID, membership, host, port, c.WebSTOMPPath,
		c.RancherURL, c.RancherAccessKey, c.RancherSecretKey, c.Image, map[bool]string{false: "managed", true: "self_managed"}[c.SelfManaged])
	if c.FloatingIPs {
		b.WriteString("      allocate_floating_ip_to_all_nodes: true\n")
	}
	for _, p := range []struct {
		kind string
		p    ClusterNodeProfile
	}{{"server", c.Server}, {"worker", c.Worker}, {"load_balancer", c.LoadBalancer}} {
		if p.p.Flavor != "" {
			fmt.Fprintf(&b, "      managed_rancher_%s_flavor_name: %q\n", p.kind, p.p.Flavor)
		}
		if p.p.SystemGB != 0 {
			fmt.Fprintf(&b, "      managed_rancher_%s_system_volume_size_gb: %d\n", p.kind, p.p.SystemGB)
		}
		if p.p.DataGB != 0 {
			fmt.Fprintf(&b, "      managed_rancher_%s_data_volume_size_gb: %d\n", p.kind, p.p.DataGB)
		}
	}
	if c.VaultURL != "" {
		fmt.Fprintf(&b, "      vault_host: %q\n      vault_token: %q\n", c.VaultURL, c.VaultToken)
	}
	if c.KeycloakURL != "" {
		pw := c.KeycloakPassword
		if pw == "" {
			pw = "admin"
		}
		fmt.Fprintf(&b, "      keycloak_enabled: true\n"+
			"      keycloak: {keycloak_url: %q, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: %q}\n",
			strings.TrimRight(c.KeycloakURL, "/")+"/", pw)
	}
	if c.ArgoCDKubeconfig != "" {
		fmt.Fprintf(&b, "      argocd_k8s_kubeconfig: %q\n      argocd_k8s_namespace: %q\n", c.ArgoCDKubeconfig, c.ArgoCDNamespace)
	}
	if len(c.RoleMapping) > 0 {
		b.WriteString("      role_mapping:\n")
		for _, k := range slices.Sorted(maps.Keys(c.RoleMapping)) {
			fmt.Fprintf(&b, "        %q: %q\n", k, c.RoleMapping[k])
		}
	}
	b.WriteString("      openstack_offering_uuid_list:\n")
	for _, z := range c.Zones {
		ext := ""
		if z.ExternalNetworkID != "" {
			ext = fmt.Sprintf("\n          external_network_id: %q", z.ExternalNetworkID)
		}
		fmt.Fprintf(&b, `        - uuid: %q
          slug: %q
          name: %q
          availability_zone: %q%s
          dns_nameservers: [1.1.1.1]
          cloud:
            auth:
              auth_url: %q
              username: admin
              password: %q
              project_name: admin
              user_domain_name: Default
              project_domain_name: Default
            region_name: RegionOne
`, z.UUID, z.Slug, z.Name, z.AvailabilityZone, ext, z.AuthURL, z.Password)
	}
	return b.String()
}
