package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// InputOf is the saga input of a rancher-cluster order of offering o
// (see Service.Input): the resource, read from Waldur, and the order's
// attributes.
func InputOf(ctx context.Context, o *Offering, offeringUUID string, order *waldur.Order) (Input, error) {
	resUUID := order.MarketplaceResourceUUID
	if resUUID == "" {
		resUUID = order.ResourceUUID
	}
	res, err := o.Waldur.GetResource(ctx, resUUID)
	if err != nil {
		return Input{}, fmt.Errorf("get resource %s: %w", resUUID, err)
	}
	return Input{
		OfferingUUID: offeringUUID, OrderUUID: events.HexUUID(order.UUID), ResourceUUID: res.UUID,
		Resource: ResourceRef{UUID: res.UUID, Name: res.Name, Slug: res.Slug, BackendID: res.BackendID,
			ProjectUUID: res.ProjectUUID, ProjectSlug: res.ProjectSlug, ProjectName: res.ProjectName,
			CustomerUUID: res.CustomerUUID, CustomerSlug: res.CustomerSlug, CustomerName: res.CustomerName},
		Attributes: order.Attributes,
	}, nil
}

// PlannedSaga is what `sitebus orders explain` says of a cluster saga
// whose steps it does not run: each step makes objects the next ones
// need (a tenant's id, the cluster's registration token, VMs that boot
// and register), which a dry run cannot make. So it says per step what
// the step would make or remove, named as the real steps name them.
type PlannedSaga struct {
	// Plan is the cluster's plan, as the create's plan step computes it
	// (run here: it only reads the offering's OpenStack catalog); nil for
	// the other sagas, whose plan is the one the create stored in NATS.
	Plan json.RawMessage
	// Steps maps a step's name to what it would do.
	Steps map[string]string
}

// ExplainCluster plans the saga def for input in of offering o without
// changing anything: for a create it runs the plan step's code
// (ranchercluster.PlanCreate, whose failure is the order's), for a
// terminate or an update it names what the stored plan's objects are
// called. ctx bounds the catalog's reads.
func ExplainCluster(ctx context.Context, o *Offering, def string, in Input) (*PlannedSaga, error) {
	res := in.Resource.backend()
	hex := hexUUID(in.ResourceUUID)
	out := &PlannedSaga{Steps: map[string]string{}}
	if def != ClusterCreate {
		// backend_id is Rancher's id of the cluster (c-m-…), set by the
		// create's settle step.
		cluster := ranchercluster.ClusterName(in.Resource.Slug)
		if id := in.Resource.BackendID; id != "" {
			cluster += " (id " + id + ")"
		}
		stored := "the plan the create stored (bucket of the cluster-provisioner, in NATS; explain does not read it)"
		switch def {
		case ClusterTerminate:
			out.Steps["plan"] = "loads " + stored
			out.Steps["argocd"] = "removes the cluster's ArgoCD Secret " + ranchercluster.ArgoCDSecretName(hex) + ", if the plan has one"
			out.Steps["access"] = "unbinds and deletes the Keycloak groups " + ranchercluster.KeycloakParentGroup(hex) + " and its role groups, if the plan has them"
			out.Steps["nodes"] = "drains the nodes of Rancher cluster " + cluster + " and deletes their VMs and volumes"
			out.Steps["cluster"] = "deletes Rancher cluster " + cluster
			out.Steps["vault"] = vaultWords(hex, "deletes")
			out.Steps["load-balancers"] = "deletes the load-balancer VMs (" + ranchercluster.LoadBalancerName(in.Resource.Slug) + " per zone)"
			out.Steps["tenants"] = "deletes the OpenStack tenants the create made (routers, networks, security groups, users, projects)"
			out.Steps["forget"] = "deletes the stored plan"
		default:
			out.Steps["plan"] = "plans the change against " + stored + " and the order's attributes"
		}
		out.Steps["settle"] = "tells Waldur the order is done"
		return out, nil
	}
	p, err := ranchercluster.PlanCreate(ctx, &o.Settings, in.Attributes, res, catalog{o.Cloud})
	if err != nil {
		if fault.IsTerminal(err) {
			return nil, fmt.Errorf("the plan step would refuse the order: %w", err)
		}
		return nil, fmt.Errorf("the plan step: %w", err)
	}
	if out.Plan, err = p.Marshal(); err != nil {
		return nil, err
	}
	out.Steps["plan"] = fmt.Sprintf("plans cluster %s (%s mode): %d zone(s), %d node(s); run here", p.Cluster.Name, p.Mode, len(p.Tenants), len(p.Nodes))
	var tenants, lbs []string
	for _, t := range p.Tenants {
		router := ""
		if t.Router != nil {
			router = ", router " + t.Router.Name
		}
		tenants = append(tenants, fmt.Sprintf("project %s (zone %s, user %s, network %s, subnet %s%s)",
			t.Name, t.AvailabilityZone, t.UserName, t.Network.Name, t.Network.Subnet.Name, router))
		lbs = append(lbs, nodeWords(t.LoadBalancer))
	}
	out.Steps["tenants"] = "makes the OpenStack " + orNone(tenants)
	out.Steps["load-balancers"] = "makes the load-balancer VM(s) " + orNone(lbs)
	out.Steps["cluster"] = fmt.Sprintf("makes Rancher cluster %s in namespace %s (Kubernetes %s, CNI %s)", p.Cluster.Name, p.Cluster.Namespace, p.Cluster.KubernetesVersion, p.Cluster.CNI)
	out.Steps["registration-token"] = "gets cluster " + p.Cluster.Name + "'s registration token from Rancher"
	if p.Vault {
		out.Steps["vault"] = vaultWords(p.ClusterUUIDHex, "makes")
		out.Steps["vault-cleanup"] = vaultWords(p.ClusterUUIDHex, "deletes")
	} else {
		out.Steps["vault"] = "nothing (no vault_host: the nodes get the token in their cloud-init)"
		out.Steps["vault-cleanup"] = "nothing (no vault_host)"
	}
	var nodes []string
	for _, n := range p.Nodes {
		nodes = append(nodes, nodeWords(n))
	}
	out.Steps["nodes"] = "makes the VMs " + orNone(nodes)
	out.Steps["wait-nodes"] = fmt.Sprintf("waits until the %d node(s) are registered with Rancher and the cluster is active", len(p.Nodes))
	if k := p.Keycloak; k != nil {
		var roles []string
		for _, g := range k.RoleGroups {
			roles = append(roles, g.Group+" bound to "+g.RoleTemplate)
		}
		out.Steps["access"] = "makes the Keycloak group " + k.ParentGroup + " with " + orNone(roles)
	} else {
		out.Steps["access"] = "nothing (keycloak_enabled is off)"
	}
	if p.ArgoCDSecret != "" {
		out.Steps["argocd"] = "makes the ArgoCD cluster Secret " + p.ArgoCDSecret
	} else {
		out.Steps["argocd"] = "nothing (no argocd_k8s_kubeconfig)"
	}
	out.Steps["settle"] = "tells Waldur Rancher's id of cluster " + p.Cluster.Name + " as the backend_id, its metadata and endpoints, and that the order is done"
	return out, nil
}

func vaultWords(hex, verb string) string {
	c, err := vault.ParseCluster(hex)
	if err != nil {
		return verb + " the cluster's Vault objects"
	}
	return fmt.Sprintf("%s the Vault policy %s, AppRole %s and secret %s", verb, c.PolicyName(), c.RoleName(), c.CLISecretPath())
}

func nodeWords(n ranchercluster.NodePlan) string {
	return fmt.Sprintf("%s (%s, flavor %s, image %s, %d GB system volume)", n.Name, n.Role, n.Flavor.Name, n.Image, n.SystemVolume.SizeGB)
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// ExplainVCluster says what each step of the vcluster saga def would do
// for input in, named as the steps name their objects
// (pkg/backend/vcluster): its steps wait on the virtual cluster vCluster
// makes and on Rancher, which a dry run cannot make.
func ExplainVCluster(o *VClusterOffering, def string, in VClusterInput) (*PlannedSaga, error) {
	res := in.Resource.backend()
	res.UUID = in.ResourceUUID
	ns, err := vcluster.NamespaceName(res)
	if err != nil {
		return nil, fmt.Errorf("the namespace step would refuse the order: %w", err)
	}
	out := &PlannedSaga{Steps: map[string]string{}}
	rancher := "nothing (import_to_rancher is off)"
	if def == VClusterCreate {
		out.Steps["namespace"] = fmt.Sprintf("makes the host namespace %s with ResourceQuota %s (the order's limits) and LimitRange %s", ns, vcluster.QuotaName, vcluster.LimitRangeName)
		out.Steps[stepVCRelease] = explainRelease(o, def, ns)
		out.Steps["kubeconfig"] = fmt.Sprintf("waits for vCluster's kubeconfig Secret %s in %s and the virtual cluster's API", vcluster.SecretName(ns), ns)
		if o.Settings.ImportToRancher {
			rancher = "makes the Rancher cluster " + vcluster.ClusterName(ns)
		}
		out.Steps["import"] = rancher
		out.Steps["cluster-id"] = "waits for Rancher's id of cluster " + vcluster.ClusterName(ns)
		out.Steps["agent"] = "applies Rancher's agent (the registration manifest) in the virtual cluster"
		out.Steps["ready"] = "waits until Rancher reports cluster " + vcluster.ClusterName(ns) + " ready"
		out.Steps["members"] = "nothing: membership_sync_backend is not vcluster, so no team is synced"
		if o.MemberSync {
			out.Steps["members"] = "asks the membership service to apply the resource's team to the cluster's access now (member_source " +
				o.Settings.MemberSource + "); a failure is left to the next membership period"
		}
		out.Steps["settle"] = "tells Waldur the backend_id " + ns + " and that the order is done"
		return out, nil
	}
	withRancher := o.Rancher != nil || o.Settings.ImportToRancher
	if withRancher {
		rancher = "deletes the Rancher cluster " + vcluster.ClusterName(ns) + ", if it is this resource's"
	}
	access := "removes sitebus's bindings of the Rancher cluster " + vcluster.ClusterName(ns)
	if s := o.Settings; s.MemberSource == vcluster.MemberSourceWaldurTeam && s.KeycloakEnabled {
		parent, _ := s.RoleGroups(in.ResourceUUID)
		access += " and deletes the Keycloak group " + parent + " and its role groups, if they carry sitebus's mark"
	}
	if !withRancher {
		access = "nothing (no Rancher)"
	}
	out.Steps["access"] = access
	out.Steps["import"] = rancher
	out.Steps["agent"] = "removes Rancher's agent from the virtual cluster"
	out.Steps[stepVCRelease] = explainRelease(o, def, ns)
	out.Steps["namespace"] = "deletes the host namespace " + ns + " (and with it the virtual cluster)"
	out.Steps["settle"] = "tells Waldur the order is done"
	return out, nil
}
