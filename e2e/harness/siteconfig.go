package harness

import (
	"fmt"
	"strings"
)

// SiteConfig describes a sitebus configuration with one offering, against
// the Waldur simulator and a RabbitMQ Web-STOMP listener (no TLS), the way
// the end-to-end tests and the local tools (sitebus-dev, benchproc) set a
// site up.
type SiteConfig struct {
	// WaldurURL is the simulator's base URL (without /api/).
	WaldurURL    string
	Token        string
	OfferingUUID string
	// WebSTOMPAddr is the broker's Web-STOMP host:port; WebSTOMPPath its path.
	WebSTOMPAddr, WebSTOMPPath string
	// MembershipBackend, when set, also subscribes to the membership object
	// types (user_role, resource, ...).
	MembershipBackend string
	// Kubeconfig and CRNamespace point the ManagedNamespace backend at a
	// cluster; without them only the STOMP bridge can run.
	Kubeconfig, CRNamespace string
	// KeycloakURL, when set, enables access groups in that Keycloak (realm
	// waldur, admin in master, users looked up by username).
	KeycloakURL string
	// KeycloakPassword is the admin's password; default "admin".
	KeycloakPassword string
	// Sitebus is more lines of the sitebus section (2-space indented),
	// e.g. "  streams: {replicas: 3}\n".
	Sitebus string
}

// YAML renders the configuration file.
func (c SiteConfig) YAML() string {
	host, port, _ := strings.Cut(c.WebSTOMPAddr, ":")
	var membership string
	if c.MembershipBackend != "" {
		membership = "    membership_sync_backend: " + c.MembershipBackend + "\n"
	}
	var settings string
	if c.Kubeconfig != "" {
		settings = fmt.Sprintf("    backend_settings:\n      kubeconfig_path: %q\n      cr_namespace: %q\n", c.Kubeconfig, c.CRNamespace)
		if c.KeycloakURL != "" {
			pw := c.KeycloakPassword
			if pw == "" {
				pw = "admin"
			}
			settings += fmt.Sprintf("      keycloak_enabled: true\n      keycloak_use_user_id: false\n"+
				"      keycloak: {keycloak_url: %q, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: %q}\n",
				strings.TrimRight(c.KeycloakURL, "/")+"/", pw)
		}
	}
	return fmt.Sprintf(`offerings:
  - name: local-namespaces
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: k8s-ut-namespace
    order_processing_backend: k8s-ut-namespace
%s    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
%s    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {type: ram, measured_unit: GiB, accounting_type: limit, label: RAM}
      storage: {type: storage, measured_unit: GiB, accounting_type: limit, label: Storage}
sitebus:
  log_format: text
  stomp:
    transport: websocket
%s`, strings.TrimRight(c.WaldurURL, "/"), c.Token, c.OfferingUUID, membership, host, port, c.WebSTOMPPath, settings, c.Sitebus)
}
