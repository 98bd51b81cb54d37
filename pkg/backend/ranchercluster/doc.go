// Package ranchercluster is the pure logic of the rancher-cluster
// offering: whole Rancher RKE2 clusters on OpenStack, built
// the way Waldur Mastermind's managed Rancher builds them. It decodes the
// offering's settings (DecodeSettings) and orders' attributes
// (DecodeManagedAttributes, DecodeSelfManagedAttributes,
// DecodeUpdateAttributes), applies Mastermind's validation rules with its
// messages (ValidateManaged, ValidateSelfManaged), and computes a Plan:
// every OpenStack object, VM, volume, Rancher cluster input and Keycloak
// group one order makes, deterministically and as JSON, so the saga can
// persist it before it acts and its compensation knows what to remove
// (PlanManaged, PlanSelfManaged, PlanResize, PlanServers, PlanRemoveNodes,
// PlanRename). It makes no call; what it must know of a zone (flavors,
// volume types, subnets, security groups) it asks a Catalog the caller
// supplies.
//
// Names (names.go), as Mastermind's unless said otherwise:
//
//   - tenant (Keystone project) os-tenant-<vm project slug>-<offering
//     slug>, where the vm project slug is "<project slug>-<resource slug>"
//     (VMProjectSlug: Mastermind makes a Waldur project per cluster; the
//     project's slug alone would give two clusters of one project one
//     tenant); network <tenant[:25]>-int-net, subnet <tenant>-sub-net,
//     router <tenant>-router, user <tenant>-user;
//   - subnet CIDR per zone: subnet_cidr, default 192.168.(42+i).0/24 for
//     the i-th zone of the settings' list (distinct, since a cluster's
//     nodes span its zones); gateway .1, load balancer .10, pool .11-.200;
//   - cluster k8s-<resource slug> (managed) or the order's name
//     (self-managed); load balancer k8s-lb-<resource slug>; nodes
//     <cluster>-rancher-node-<n>, n from 1 over all zones, new ones taking
//     the lowest free number; volumes <vm>-system, <vm>-data-<i>;
//   - security groups k8s_admin (tcp 22 and 6443 from admin_allowed_cidrs)
//     and k8s_public (tcp 80 and 443), with their rules (Mastermind makes
//     them empty);
//   - Keycloak groups c_<uuid hex> and c_<uuid hex>_<role> per
//     cluster_roles (the membership service puts the resource's team into
//     the role groups by role_mapping), ArgoCD Secret cluster-<uuid hex>;
//     the UUID is the Waldur resource's. Vault's names are pkg/vault's.
//
// A name longer than its object allows (63 for anything that becomes a
// hostname or Rancher name, 64 for Keystone) keeps a prefix and gets 8 hex
// digits of its SHA-256, so long names stay distinct. Slugs and order
// names are used as they are or refused, never rewritten: rewriting could
// map two resources to one name and so one order onto another's objects.
//
// Deliberate differences from Mastermind: settings that cannot work are
// refused when the file is checked (half a private registry, ArgoCD
// without namespace, missing managed flavors and sizes); a zone selected
// twice is refused; the servers' data volume is GB×1024 MB (Mastermind
// passes the GB number as MB); volume types and storage mode are the
// zone's in validation and plan alike; order sizes in MB become whole GB
// rounded up, and limits are checked on those; the server count message
// gives the servers' count; every problem of an order is reported at once;
// a self-managed order's subnets and security groups must be the zone
// credentials' project's (or a shared network's), and its zones need an
// external network when every node gets a floating IP (Mastermind's
// Waldur made such a node without one); its ssh_public_key goes into the
// nodes' cloud-config, not into a Nova key pair.
package ranchercluster
