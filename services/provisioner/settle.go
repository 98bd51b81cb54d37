package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func isNotFound(err error) bool { return errors.Is(err, backend.ErrNotFound) }

// access makes the cluster's Keycloak groups (through keycloak-sync) and
// binds each child group to the cluster with its role template.
func (a *activities) access(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan.Keycloak == nil {
		return nil, err
	}
	kp := r.plan.Keycloak
	children := make([]string, 0, len(kp.RoleGroups))
	for _, b := range kp.RoleGroups {
		children = append(children, b.Group)
	}
	var out AccessOutput
	if a.groups == nil {
		return nil, bus.Terminal(errors.New("the plan has Keycloak groups but this cluster-provisioner reaches no keycloak-sync"))
	}
	if out.CreatedGroups, err = a.groups.Ensure(ctx, "saga:"+in.SagaID+":groups", r.in.OfferingUUID, kp.ParentGroup, children); err != nil {
		return nil, fmt.Errorf("keycloak groups: %w", err)
	}
	ref := r.clusterRef()
	for _, b := range kp.RoleGroups {
		created, err := r.o.Rancher.EnsureClusterGroupBinding(ctx, ref, b.RoleTemplate, b.Group)
		if err != nil {
			err = fmt.Errorf("bind group %s as %s: %w", b.Group, b.RoleTemplate, err)
			return nil, r.failed(ctx, in, err, func(ctx context.Context) error { return a.removeAccess(ctx, in, r) })
		}
		if created {
			out.CreatedBindings = append(out.CreatedBindings, b.Group)
		}
	}
	r.log.Info("cluster access ready", "parent_group", kp.ParentGroup, "groups", children)
	return json.Marshal(out)
}

// deleteAccess unbinds the child groups and deletes the cluster's groups
// (children first). The groups are named by the resource's UUID, so they
// are this cluster's alone.
func (a *activities) deleteAccess(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil || r.plan.Keycloak == nil {
		return nil, err
	}
	return nil, a.removeAccess(ctx, in, r)
}

func (a *activities) removeAccess(ctx context.Context, in saga.ActivityInput, r *run) error {
	kp := r.plan.Keycloak
	ref := r.clusterRef()
	children := make([]string, 0, len(kp.RoleGroups))
	var errs []error
	for _, b := range kp.RoleGroups {
		children = append(children, b.Group)
		if ref.ID == "" {
			continue
		}
		if err := r.o.Rancher.DeleteClusterGroupBinding(ctx, ref, b.RoleTemplate, b.Group); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("unbind group %s: %w", b.Group, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if a.groups == nil {
		return nil
	}
	phase := "do"
	if in.Compensating {
		phase = "undo"
	}
	if err := a.groups.Delete(ctx, "saga:"+in.SagaID+":"+in.Step+":"+phase+":"+fmt.Sprint(in.Attempt), r.in.OfferingUUID, kp.ParentGroup, children); err != nil {
		return fmt.Errorf("delete keycloak groups: %w", err)
	}
	return nil
}

// settle records the plan for the terminate, then tells Waldur what was
// made and marks the order done; for a terminate it marks the order done.
func (a *activities) settle(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	w := r.o.Waldur
	var notReady string
	if in.Definition == ClusterCreate {
		var wait WaitOutput
		if _, err := in.DecodeOutput("wait-nodes", &wait); err != nil {
			return nil, err
		}
		notReady = wait.NotReady
		r.made.OfferingUUID, r.made.Erred = r.in.OfferingUUID, notReady
		raw, err := json.Marshal(r.made)
		if err != nil {
			return nil, err
		}
		if err := a.plans.Put(ctx, hexUUID(r.in.ResourceUUID), raw); err != nil {
			return nil, fmt.Errorf("record what the cluster is made of: %w", err)
		}
		ref := r.clusterRef()
		if err := w.SetResourceBackendID(ctx, r.in.ResourceUUID, ref.ID); err != nil {
			return nil, fmt.Errorf("set_backend_id: %w", err)
		}
		md := r.metadata(ref.ID)
		if e := argoCDError(in.Outputs); e != "" {
			md["argocd_error"] = e
		}
		if notReady != "" {
			md["not_ready"] = notReady
		}
		if err := w.SetResourceBackendMetadata(ctx, r.in.ResourceUUID, md); err != nil {
			return nil, fmt.Errorf("set_backend_metadata: %w", err)
		}
		if eps := r.endpoints(ref.ID); len(eps) > 0 {
			if err := w.SetResourceEndpoints(ctx, r.in.ResourceUUID, eps); err != nil {
				return nil, fmt.Errorf("set_endpoints: %w", err)
			}
		}
	}
	if in.Definition == ClusterUpdate {
		// The nodes (and the name) changed: Waldur shows them as they are.
		if err := w.SetResourceBackendMetadata(ctx, r.in.ResourceUUID, r.metadata(r.clusterRef().ID)); err != nil {
			return nil, fmt.Errorf("set_backend_metadata: %w", err)
		}
	}
	return nil, endOrder(ctx, a.orders, w, r.log, orderIDs{r.in.OfferingUUID, r.in.OrderUUID, r.in.ResourceUUID}, notReady, "cluster")
}

// orderIDs name a saga's order: its offering, the order and its resource.
type orderIDs struct{ offering, order, resource string }

// endOrder ends the order once settle told Waldur what was made: done,
// or, when notReady says the cluster was not usable by its deadline,
// erred with the resource erred too. The cluster (kept names it, for the
// log) is kept and recorded: terminate removes it, and the cluster pass
// sets the resource OK once Rancher reports it ready. The rancher-cluster
// and vcluster settles share it.
func endOrder(ctx context.Context, orders Orders, w Waldur, log *slog.Logger, ids orderIDs, notReady, kept string) error {
	if orders == nil {
		return fault.Terminal(errors.New("this cluster-provisioner settles no orders"))
	}
	if notReady != "" {
		if err := w.SetResourceErred(ctx, ids.resource, notReady, ""); err != nil {
			return fmt.Errorf("set_as_erred: %w", err)
		}
		if err := orders.MarkErred(ctx, ids.offering, ids.order, notReady); err != nil {
			return err
		}
		log.Warn("order erred, "+kept+" kept", "order", ids.order, "reason", notReady)
		return nil
	}
	if err := orders.MarkDone(ctx, ids.offering, ids.order); err != nil {
		return err
	}
	log.Info("order done", "order", ids.order)
	return nil
}

func (r *run) metadata(clusterID string) map[string]any {
	md := map[string]any{
		"cluster_name": r.plan.Cluster.Name, "cluster_id": clusterID, "mode": r.plan.Mode,
		"kubernetes_version": r.plan.Cluster.KubernetesVersion, "display_name": r.plan.Cluster.DisplayName,
	}
	var nodes []string
	for _, n := range r.plan.Nodes {
		nodes = append(nodes, n.Name)
	}
	md["nodes"] = nodes
	if len(r.made.Tenants) > 0 {
		projects := map[string]any{}
		for _, t := range r.made.Tenants {
			projects[t.OfferingUUID] = t.Project.ID
		}
		md["openstack_projects"] = projects
	}
	return md
}

// endpoints are Rancher's page of the cluster and each load balancer's
// address (its floating IP when it has one).
func (r *run) endpoints(clusterID string) []waldur.Endpoint {
	var eps []waldur.Endpoint
	if base := strings.TrimRight(r.o.Settings.BackendURL, "/"); base != "" && clusterID != "" {
		eps = append(eps, waldur.Endpoint{Name: "Rancher", URL: base + "/dashboard/c/" + clusterID})
	}
	for _, s := range r.made.LoadBalancers {
		ip := s.FloatingIP
		if ip == "" && len(s.Addresses) > 0 {
			ip = s.Addresses[0]
		}
		if ip != "" {
			name := s.Name
			if az, ok := r.o.Settings.Offering(s.OfferingUUID); ok {
				name += " (" + az.Label() + ")"
			}
			eps = append(eps, waldur.Endpoint{Name: name, URL: "https://" + ip})
		}
	}
	return eps
}
