package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Saga definitions of the vcluster offering: one Waldur resource is one
// virtual cluster on a host cluster, imported into Rancher as Loft's
// vcluster-rancher-operator imports one (a v1 provisioning cluster with an
// empty spec, its registration token's manifest applied into the virtual
// cluster).
const (
	// VClusterCreate makes the host namespace with its quota, waits for
	// the virtual cluster's kubeconfig and API, imports it into Rancher,
	// installs Rancher's agent in it, waits for Rancher to report it
	// ready and tells Waldur.
	VClusterCreate = "vcluster-create"
	// VClusterTerminate deletes sitebus's bindings of the Rancher
	// cluster and the Keycloak role groups member sync made, then the
	// Rancher cluster, the agent's objects in the virtual cluster and the
	// host namespace, then tells Waldur.
	VClusterTerminate = "vcluster-terminate"
)

const (
	actVCNamespace       = "vcluster.namespace"
	actVCDeleteNamespace = "vcluster.delete-namespace"
	actVCKubeconfig      = "vcluster.kubeconfig"
	actVCImport          = "vcluster.import"
	actVCDeleteImport    = "vcluster.delete-import"
	actVCClusterID       = "vcluster.cluster-id"
	actVCAgent           = "vcluster.agent"
	actVCRemoveAgent     = "vcluster.remove-agent"
	actVCReady           = "vcluster.ready"
	actVCSettle          = "vcluster.settle"
	actVCDeleteAccess    = "vcluster.delete-access"
	actVCMembers         = "vcluster.members"
)

// VClusterOffering is one vcluster offering with the clients its sagas
// use.
type VClusterOffering struct {
	Name     string
	Settings vcluster.Settings
	Waldur   Waldur
	Host     VClusterHost
	// Rancher is nil when the settings name no Rancher (backend_url and
	// an API key); with import_to_rancher false it is kept to un-import
	// what an earlier import made.
	Rancher VClusterRancher
	Virtual VirtualCluster
	// Driver makes the virtual cluster (vcluster_driver.go); nil for the
	// external driver.
	Driver VClusterDriver
	// MemberSync is membership_sync_backend: vcluster; the create then
	// grants the team access before the order is done.
	MemberSync bool
}

// VClusterHost is the host side of a virtual cluster (*vcluster.Backend).
type VClusterHost interface {
	EnsureNamespace(ctx context.Context, r backend.Resource) (name string, existed bool, err error)
	SetLimits(ctx context.Context, ns string, limits map[string]float64) (bool, error)
	EnsureLimitRange(ctx context.Context, ns string) error
	DeleteNamespace(ctx context.Context, ns, resourceUUID string) error
	// VirtualConfig reaches the virtual cluster's API from its kubeconfig
	// Secret (vcluster.ErrNoKubeconfig while there is none).
	VirtualConfig(ctx context.Context, ns string) (*rest.Config, error)
	// ImportMarks reads Loft's skip-import annotation and vCluster
	// Service of the host namespace.
	ImportMarks(ctx context.Context, ns string) (vcluster.ImportMarks, error)
}

var _ VClusterHost = (*vcluster.Backend)(nil)

// VClusterRancher is the import's Rancher (*rancher.ClusterClient).
type VClusterRancher interface {
	CreateImportedCluster(ctx context.Context, spec rancher.ImportedClusterSpec) (rancher.ProvisioningCluster, error)
	WaitV3ClusterID(ctx context.Context, name string, timeout time.Duration) (string, error)
	CreateRegistrationToken(ctx context.Context, ref rancher.ClusterRef) (rancher.RegistrationToken, error)
	GetProvisioningCluster(ctx context.Context, name string) (rancher.ProvisioningCluster, error)
	DeleteCluster(ctx context.Context, ref rancher.ClusterRef) error
	ClusterRoleBindings(ctx context.Context, ref rancher.ClusterRef) ([]rancher.RoleBinding, error)
	DeleteClusterRoleBinding(ctx context.Context, ref rancher.ClusterRef, bindingID string) error
}

var _ VClusterRancher = (*rancher.ClusterClient)(nil)

// VirtualCluster is what the sagas do inside a virtual cluster.
type VirtualCluster interface {
	Version(ctx context.Context, cfg *rest.Config) (string, error)
	// InstallAgent fetches the registration token's manifest and applies
	// it (server-side, field manager sitebus); it returns the number of
	// objects applied.
	InstallAgent(ctx context.Context, cfg *rest.Config, manifestURL string) (int, error)
	RemoveAgent(ctx context.Context, cfg *rest.Config) error
}

// KubeVirtual is VirtualCluster over the Kubernetes API (package vcluster).
type KubeVirtual struct{ InsecureManifest bool }

func (KubeVirtual) Version(ctx context.Context, cfg *rest.Config) (string, error) {
	return vcluster.Version(ctx, cfg)
}

func (k KubeVirtual) InstallAgent(ctx context.Context, cfg *rest.Config, manifestURL string) (int, error) {
	m, err := vcluster.FetchManifest(ctx, nil, manifestURL, k.InsecureManifest)
	if err != nil {
		return 0, err
	}
	return vcluster.ApplyManifest(ctx, cfg, m)
}

func (KubeVirtual) RemoveAgent(ctx context.Context, cfg *rest.Config) error {
	return vcluster.RemoveAgent(ctx, cfg)
}

// VClusterInput is the input of both vcluster sagas.
type VClusterInput struct {
	OfferingUUID string      `json:"offering_uuid"`
	OrderUUID    string      `json:"order_uuid"`
	ResourceUUID string      `json:"resource_uuid"`
	Resource     ResourceRef `json:"resource"`
	// Limits are the order's limits; the attributes' cpu, ram and storage
	// win over them.
	Limits     map[string]float64 `json:"limits,omitempty"`
	Attributes json.RawMessage    `json:"attributes,omitempty"`
}

// Outputs of the vcluster steps: names and ids, never the kubeconfig or
// the token.
type (
	// VClusterNamespaceOutput is the namespace step's.
	VClusterNamespaceOutput struct {
		Namespace string `json:"namespace"`
		Created   bool   `json:"created"`
	}
	// VClusterImportOutput is the import step's.
	VClusterImportOutput struct {
		Name    string `json:"name"`
		Created bool   `json:"created"`
		// Skipped is true when Loft's loft.sh/vcluster-skip-import
		// keeps the virtual cluster out of Rancher.
		Skipped bool `json:"skipped,omitempty"`
	}
	// VClusterIDOutput is the cluster-id step's.
	VClusterIDOutput struct {
		ID string `json:"id"`
	}
	// VClusterKubeconfigOutput is the kubeconfig step's.
	VClusterKubeconfigOutput struct {
		Version string `json:"version"`
	}
)

func vclusterDefinitions(t Timeouts) []saga.Definition {
	t.setDefaults()
	step := func(name, action, compensation string) saga.Step {
		return saga.Step{Name: name, Action: action, Compensation: compensation, Timeout: t.Step, MaxAttempts: stepAttempts, CompensationMaxAttempts: 10}
	}
	// The waits bound themselves (kubeconfig_wait, ready_wait); a step's
	// timeout is above the longest a waiting attempt takes.
	wait := func(name, action string) saga.Step {
		s := step(name, action, "")
		s.Timeout = t.Nodes + t.Step
		return s
	}
	settle := step("settle", actVCSettle, "")
	settle.MaxAttempts = 20
	return []saga.Definition{
		{Name: VClusterCreate, Steps: []saga.Step{
			step("namespace", actVCNamespace, actVCDeleteNamespace),
			step(stepVCRelease, actVCInstall, actVCUninstall),
			wait("kubeconfig", actVCKubeconfig),
			step("import", actVCImport, actVCDeleteImport),
			wait("cluster-id", actVCClusterID),
			step("agent", actVCAgent, actVCRemoveAgent),
			wait("ready", actVCReady),
			step("members", actVCMembers, ""),
			settle,
		}},
		{Name: VClusterTerminate, Steps: []saga.Step{
			step("access", actVCDeleteAccess, ""),
			step("import", actVCDeleteImport, ""),
			step("agent", actVCRemoveAgent, ""),
			step(stepVCRelease, actVCUninstall, ""),
			step("namespace", actVCDeleteNamespace, ""),
			settle,
		}},
	}
}

// vclusterActivities run the vcluster steps.
type vclusterActivities struct {
	offerings map[string]*VClusterOffering
	orders    Orders
	// plans keeps each imported virtual cluster's record for the
	// cluster pass (the rancher-cluster plans' bucket).
	plans PlanStore
	// groups deletes the Keycloak role groups (through keycloak-sync);
	// nil where no keycloak-sync is reached.
	groups Groups
	// members asks the membership service to apply a resource's team
	// now; nil where it is not reached.
	members Members
	log     *slog.Logger
	// poll is how often the waits look again.
	poll time.Duration
}

func (a *vclusterActivities) all() map[string]saga.Activity {
	return map[string]saga.Activity{
		actVCNamespace: a.namespace, actVCDeleteNamespace: a.deleteNamespace,
		actVCInstall: a.installVCluster, actVCUninstall: a.uninstallVCluster,
		actVCKubeconfig: a.kubeconfig,
		actVCImport:     a.importCluster, actVCDeleteImport: a.deleteImport,
		actVCClusterID: a.clusterID,
		actVCAgent:     a.agent, actVCRemoveAgent: a.removeAgent,
		actVCReady:        a.ready,
		actVCSettle:       a.settle,
		actVCDeleteAccess: a.deleteAccess,
		actVCMembers:      a.syncMembers,
	}
}

// vrun is what every vcluster activity starts from.
type vrun struct {
	in  VClusterInput
	o   *VClusterOffering
	ns  string
	log *slog.Logger
}

func (a *vclusterActivities) start(in saga.ActivityInput) (*vrun, error) {
	var v VClusterInput
	if err := in.DecodeInput(&v); err != nil {
		return nil, err
	}
	if v.OfferingUUID == "" || v.ResourceUUID == "" {
		return nil, bus.Terminal(fmt.Errorf("saga %s: input without offering or resource", in.SagaID))
	}
	o, ok := a.offerings[v.OfferingUUID]
	if !ok {
		return nil, bus.Terminal(fmt.Errorf("offering %s is no vcluster offering here", v.OfferingUUID))
	}
	ns := v.Resource.BackendID
	if ns == "" {
		var err error
		if ns, err = vcluster.NamespaceName(v.Resource.backend()); err != nil {
			return nil, err
		}
	}
	return &vrun{in: v, o: o, ns: ns, log: a.log.With("saga", in.SagaID, "step", in.Step, "namespace", ns, "resource", v.ResourceUUID)}, nil
}

func (r *vrun) ref() rancher.ClusterRef {
	return rancher.ClusterRef{Name: vcluster.ClusterName(r.ns), ResourceUUID: r.in.ResourceUUID}
}

func (r *vrun) importing() bool { return r.o.Settings.ImportToRancher && r.o.Rancher != nil }

// imported reports whether the import step put the virtual cluster into
// Rancher (importing, and not skipped for Loft's skip-import mark).
func (r *vrun) imported(in saga.ActivityInput) (bool, error) {
	if !r.importing() {
		return false, nil
	}
	var out VClusterImportOutput
	if _, err := in.DecodeOutput("import", &out); err != nil {
		return false, err
	}
	return !out.Skipped, nil
}

// limits are the order's limits with the attributes' over them.
func (r *vrun) limits() (map[string]float64, error) {
	attrs, err := vcluster.DecodeAttributes(r.in.Attributes)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	maps.Copy(out, r.in.Limits)
	maps.Copy(out, attrs.Limits())
	return out, nil
}

// lastAttempt reports whether no attempt follows err.
func lastAttempt(in saga.ActivityInput, err error) bool {
	return bus.IsTerminal(err) || fault.IsTerminal(err) || in.Attempt >= stepAttempts
}

// namespace makes the host namespace vc-<slug>, its quota and limit range.
// A namespace of that name that is not this resource's errs the order and
// is left as it was. A quota the API server refuses for good deletes the
// namespace this step made (the saga compensates only completed steps).
func (a *vclusterActivities) namespace(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	limits, err := r.limits()
	if err != nil {
		return nil, err
	}
	if err := backend.CheckLimits(limits, nil); err != nil {
		return nil, err
	}
	res := r.in.Resource.backend()
	res.UUID = r.in.ResourceUUID
	ns, existed, err := r.o.Host.EnsureNamespace(ctx, res)
	if err != nil {
		return nil, err
	}
	// A namespace this resource's earlier attempt made counts as made by
	// this step: it is this resource's (EnsureNamespace checked the marks).
	out := VClusterNamespaceOutput{Namespace: ns, Created: true}
	_, err = r.o.Host.SetLimits(ctx, ns, limits)
	if err == nil {
		err = r.o.Host.EnsureLimitRange(ctx, ns)
	}
	if err != nil {
		if lastAttempt(in, err) && !errors.Is(ctx.Err(), context.Canceled) {
			if derr := r.o.Host.DeleteNamespace(context.WithoutCancel(ctx), ns, r.in.ResourceUUID); derr != nil {
				return nil, fmt.Errorf("%w (and deleting namespace %s failed: %v)", err, ns, derr)
			}
		}
		return nil, err
	}
	r.log.Info("host namespace ready", "existed", existed, "limits", limits)
	return json.Marshal(out)
}

// deleteNamespace deletes the host namespace when it is this resource's;
// as a compensation, only when the create made it.
func (a *vclusterActivities) deleteNamespace(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	if in.Compensating {
		var out VClusterNamespaceOutput
		if ok, err := in.DecodeOutput("namespace", &out); err != nil || !ok || !out.Created {
			return nil, err
		}
	}
	if err := r.o.Host.DeleteNamespace(ctx, r.ns, r.in.ResourceUUID); err != nil {
		return nil, err
	}
	r.log.Info("host namespace deleted")
	return nil, nil
}

// waitFor calls check at once and then every poll until it is done, it
// fails for good, or within has passed (done false).
func (a *vclusterActivities) waitFor(ctx context.Context, within time.Duration, check func(context.Context) (bool, error)) (bool, error) {
	deadline := time.Now().Add(within)
	poll := a.poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for {
		done, err := check(ctx)
		if done || (err != nil && (fault.IsTerminal(err) || bus.IsTerminal(err))) {
			return done, err
		}
		if !time.Now().Before(deadline) {
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// virtual waits (bounded by kubeconfig_wait) for the kubeconfig Secret and
// returns how to reach the virtual cluster.
func (a *vclusterActivities) virtual(ctx context.Context, r *vrun) (*rest.Config, error) {
	var cfg *rest.Config
	done, err := a.waitFor(ctx, r.o.Settings.KubeconfigWait, func(ctx context.Context) (bool, error) {
		var err error
		cfg, err = r.o.Host.VirtualConfig(ctx, r.ns)
		return err == nil, err
	})
	if done {
		return cfg, nil
	}
	if err == nil || errors.Is(err, vcluster.ErrNoKubeconfig) {
		return nil, fmt.Errorf("the virtual cluster's kubeconfig Secret %s/%s is not there after %s; retry", r.ns, vcluster.SecretName(r.ns), r.o.Settings.KubeconfigWait)
	}
	return nil, err
}

// kubeconfig waits for the Secret and for /version answered by the
// virtual cluster.
func (a *vclusterActivities) kubeconfig(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	cfg, err := a.virtual(ctx, r)
	if err != nil {
		return nil, err
	}
	var version string
	done, err := a.waitFor(ctx, r.o.Settings.KubeconfigWait, func(ctx context.Context) (bool, error) {
		var err error
		version, err = r.o.Virtual.Version(ctx, cfg)
		return err == nil, nil
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("the virtual cluster of %s does not answer /version after %s; retry", r.ns, r.o.Settings.KubeconfigWait)
	}
	r.log.Info("virtual cluster answers", "version", version)
	return json.Marshal(VClusterKubeconfigOutput{Version: version})
}

// importCluster makes the Rancher provisioning cluster with an empty spec,
// sitebus's ownership marks and Loft's labels (loft.sh/vcluster-service-uid
// and loft.sh/vcluster-host-cluster, as Loft's operator sets them). A
// cluster of that name that is not this resource's errs the order and is
// left as it was. Loft's loft.sh/vcluster-skip-import=true on the host
// namespace or the vCluster Service skips the import; the order still
// settles.
func (a *vclusterActivities) importCluster(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || !r.importing() {
		return nil, err
	}
	p, skipped, err := importInto(ctx, r.o, r.ns, r.in.ResourceUUID)
	if err != nil {
		return nil, err
	}
	if skipped {
		r.log.Info("import into Rancher skipped: " + vcluster.AnnotationSkipImport + "=true")
		return json.Marshal(VClusterImportOutput{Name: vcluster.ClusterName(r.ns), Skipped: true})
	}
	r.log.Info("Rancher imported cluster ready to register", "cluster", p.ID, "created", p.Created)
	return json.Marshal(VClusterImportOutput{Name: p.Name, Created: true})
}

// importInto makes (or adopts, when it is the resource's) the Rancher
// provisioning cluster of host namespace ns: the create's import step and
// the cluster pass's re-import share it. skipped is true, with nothing
// made, when Loft's skip-import mark is on the namespace or its vCluster
// Service.
func importInto(ctx context.Context, o *VClusterOffering, ns, resourceUUID string) (p rancher.ProvisioningCluster, skipped bool, err error) {
	marks, err := o.Host.ImportMarks(ctx, ns)
	if err != nil {
		return p, false, err
	}
	if marks.SkipImport {
		return p, true, nil
	}
	labels := marks.Labels(o.Settings.HostClusterID)
	labels["sitebus.io/vcluster-namespace"], labels["sitebus.io/vcluster-host-cluster"] = ns, o.Settings.HostClusterID
	p, err = o.Rancher.CreateImportedCluster(ctx, rancher.ImportedClusterSpec{Name: vcluster.ClusterName(ns), ResourceUUID: resourceUUID, Labels: labels})
	return p, false, err
}

// deleteAccess undoes what member sync made for the resource: the
// Rancher cluster's bindings with sitebus's marks for it (Rancher's
// creator binding and anyone's by hand are left to go with the cluster),
// then, with member_source waldur_team and Keycloak, its role groups
// c_<hex>_<role> and their parent c_<hex>. keycloak-sync deletes a group
// only when it carries sitebus's managed_by mark and deletes none of a
// request that names a foreign one, as for a rancher-cluster's groups.
func (a *vclusterActivities) deleteAccess(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	if r.o.Rancher != nil {
		ref := r.ref()
		bindings, err := r.o.Rancher.ClusterRoleBindings(ctx, ref)
		if err != nil && !errors.Is(err, backend.ErrNotFound) && !errors.Is(err, backend.ErrNotManaged) {
			return nil, fmt.Errorf("list the bindings of Rancher cluster %s: %w", ref, err)
		}
		for _, b := range bindings {
			if !b.OwnedBy(r.in.ResourceUUID) {
				continue
			}
			if err := r.o.Rancher.DeleteClusterRoleBinding(ctx, ref, b.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
				return nil, fmt.Errorf("unbind %s as %s: %w", b.Subject(), b.RoleTemplateID, err)
			}
		}
	}
	s := r.o.Settings
	if s.MemberSource != vcluster.MemberSourceWaldurTeam || !s.KeycloakEnabled || a.groups == nil {
		return nil, nil
	}
	parent, groups := s.RoleGroups(r.in.ResourceUUID)
	children := make([]string, 0, len(groups))
	for _, role := range s.ClusterRoles() {
		children = append(children, groups[role])
	}
	key := fmt.Sprintf("saga:%s:%s:%d", in.SagaID, in.Step, in.Attempt)
	if err := a.groups.Delete(ctx, key, r.in.OfferingUUID, parent, children); err != nil {
		return nil, fmt.Errorf("delete keycloak groups: %w", err)
	}
	r.log.Info("virtual cluster access removed", "parent_group", parent, "groups", children)
	return nil, nil
}

// syncMembers grants the resource's team access to the new cluster before
// the order is done, as the Rancher plugin's create does for its project,
// instead of leaving it to the next membership period. Member sync is
// desired state that every period applies again, so a failure here is
// logged and left to that period: it never undoes a cluster that is
// ready.
func (a *vclusterActivities) syncMembers(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || !r.o.MemberSync || a.members == nil {
		return nil, err
	}
	key := fmt.Sprintf("saga:%s:%s:%d", in.SagaID, in.Step, in.Attempt)
	if err := a.members.Sync(ctx, key, r.in.OfferingUUID, r.in.ResourceUUID); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.log.Warn("the team's access to the virtual cluster is left to the next membership period", "err", err)
		return nil, nil
	}
	r.log.Info("the team's access to the virtual cluster is synced")
	return nil, nil
}

// deleteImport deletes the Rancher cluster when it is this resource's.
func (a *vclusterActivities) deleteImport(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || r.o.Rancher == nil {
		return nil, err
	}
	if in.Compensating {
		var out VClusterImportOutput
		if ok, err := in.DecodeOutput("import", &out); err != nil || !ok || !out.Created {
			return nil, err
		}
	}
	if err := r.o.Rancher.DeleteCluster(ctx, r.ref()); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, err
	}
	return nil, nil
}

// clusterID waits for Rancher to name the v3 cluster (status.clusterName).
func (a *vclusterActivities) clusterID(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	if ok, err := r.imported(in); err != nil || !ok {
		return nil, err
	}
	id, err := r.o.Rancher.WaitV3ClusterID(ctx, vcluster.ClusterName(r.ns), r.o.Settings.KubeconfigWait)
	if err != nil {
		return nil, err
	}
	return json.Marshal(VClusterIDOutput{ID: id})
}

// agent applies the registration token's manifest into the virtual
// cluster. The token is read from Rancher each time and kept in memory
// only; a repeated apply changes nothing (server-side apply).
func (a *vclusterActivities) agent(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	if ok, err := r.imported(in); err != nil || !ok {
		return nil, err
	}
	var id VClusterIDOutput
	if _, err := in.DecodeOutput("cluster-id", &id); err != nil {
		return nil, err
	}
	ref := r.ref()
	ref.ID = id.ID
	n, err := installAgent(ctx, r.o, ref, func(ctx context.Context) (*rest.Config, error) { return a.virtual(ctx, r) })
	if err != nil {
		return nil, err
	}
	r.log.Info("Rancher agent applied into the virtual cluster", "cluster", ref, "objects", n)
	return nil, nil
}

// installAgent reads the registration token of the Rancher cluster ref
// and applies its manifest into the virtual cluster virtual reaches: the
// create's agent step and the cluster pass's re-import share it.
func installAgent(ctx context.Context, o *VClusterOffering, ref rancher.ClusterRef, virtual func(context.Context) (*rest.Config, error)) (int, error) {
	tok, err := o.Rancher.CreateRegistrationToken(ctx, ref)
	if err != nil {
		return 0, err
	}
	if tok.ManifestURL == "" {
		return 0, fmt.Errorf("Rancher's registration token of %s has no manifestUrl yet; retry", ref) //nolint:staticcheck // a message for Waldur
	}
	// Crash tests stop sitebus here, after Rancher's token was read and
	// before its manifest reached the virtual cluster.
	if err := failpoint.Inject(ctx, "provisioner/vcluster-agent/before-apply"); err != nil {
		return 0, err
	}
	cfg, err := virtual(ctx)
	if err != nil {
		return 0, err
	}
	return o.Virtual.InstallAgent(ctx, cfg, tok.ManifestURL)
}

// removeAgent deletes Rancher's agent from the virtual cluster; without
// a kubeconfig Secret (the virtual cluster is gone) there is nothing to
// remove.
func (a *vclusterActivities) removeAgent(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || r.o.Rancher == nil {
		return nil, err
	}
	cfg, err := r.o.Host.VirtualConfig(ctx, r.ns)
	if errors.Is(err, vcluster.ErrNoKubeconfig) || errors.Is(err, backend.ErrNotFound) || errors.Is(err, backend.ErrNotManaged) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := r.o.Virtual.RemoveAgent(ctx, cfg); err != nil {
		return nil, err
	}
	r.log.Info("Rancher agent removed from the virtual cluster")
	return nil, nil
}

// ready waits (bounded by ready_wait) for Rancher to report the imported
// cluster ready: its agent connected. A deadline that passes is no
// failure: as for a rancher-cluster whose nodes are late (settle.go), the
// virtual cluster and its import are kept, the order errs, the resource is
// erred in Waldur, and the cluster pass sets it OK once Rancher reports it
// ready. Tearing it down would throw away an agent that is only slow.
func (a *vclusterActivities) ready(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	if ok, err := r.imported(in); err != nil || !ok {
		return nil, err
	}
	name := vcluster.ClusterName(r.ns)
	done, err := a.waitFor(ctx, r.o.Settings.ReadyWait, func(ctx context.Context) (bool, error) {
		p, err := r.o.Rancher.GetProvisioningCluster(ctx, name)
		return err == nil && p.Ready, err
	})
	// Rancher unreachable is retried; on the step's last attempt it counts
	// as not ready, so the order still errs without a teardown.
	if err != nil && (ctx.Err() != nil || !lastAttempt(in, err) || fault.IsTerminal(err) || bus.IsTerminal(err)) {
		return nil, err
	}
	if !done {
		reason := fmt.Sprintf("Rancher has not reported cluster %s/%s ready within %s", r.o.Settings.FleetWorkspace, name, r.o.Settings.ReadyWait)
		r.log.Warn("virtual cluster not ready by its deadline; kept for the cluster pass", "reason", reason, "err", err)
		return json.Marshal(WaitOutput{NotReady: reason})
	}
	r.log.Info("Rancher reports the virtual cluster ready")
	return nil, nil
}

// settle tells Waldur the namespace (its backend_id) and the Rancher
// cluster, records the virtual cluster for the cluster pass, then marks the
// order done; or, when Rancher did not report it ready in time, erred
// (the rancher-cluster settle's not-ready path). A terminate forgets the
// record and marks the order done.
func (a *vclusterActivities) settle(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil {
		return nil, err
	}
	var notReady string
	if in.Definition == VClusterCreate {
		var wait WaitOutput
		if _, err := in.DecodeOutput("ready", &wait); err != nil {
			return nil, err
		}
		notReady = wait.NotReady
		var id VClusterIDOutput
		if _, err := in.DecodeOutput("cluster-id", &id); err != nil {
			return nil, err
		}
		// Recorded imported or not: the cluster pass imports it once
		// import_to_rancher is turned on, and un-imports it once off.
		if a.plans != nil {
			rec := Record{OfferingUUID: r.in.OfferingUUID, Erred: notReady,
				VCluster: &VClusterRecord{ResourceUUID: r.in.ResourceUUID, Namespace: r.ns, Name: vcluster.ClusterName(r.ns), ID: id.ID}}
			raw, err := json.Marshal(rec)
			if err != nil {
				return nil, err
			}
			if err := a.plans.Put(ctx, hexUUID(r.in.ResourceUUID), raw); err != nil {
				return nil, fmt.Errorf("record the virtual cluster for the cluster pass: %w", err)
			}
		}
		if err := r.o.Waldur.SetResourceBackendID(ctx, r.in.ResourceUUID, r.ns); err != nil {
			return nil, fmt.Errorf("set_backend_id: %w", err)
		}
		if err := r.o.Waldur.SetResourceBackendMetadata(ctx, r.in.ResourceUUID, vclusterMetadata(r.o, r.ns, id.ID, notReady)); err != nil {
			return nil, fmt.Errorf("set_backend_metadata: %w", err)
		}
		if base := strings.TrimRight(r.o.Settings.BackendURL, "/"); base != "" && id.ID != "" {
			if err := r.o.Waldur.SetResourceEndpoints(ctx, r.in.ResourceUUID, []waldur.Endpoint{{Name: "Rancher", URL: base + "/dashboard/c/" + id.ID}}); err != nil {
				return nil, fmt.Errorf("set_endpoints: %w", err)
			}
		}
	}
	if in.Definition == VClusterTerminate && a.plans != nil {
		if err := a.plans.Delete(ctx, hexUUID(r.in.ResourceUUID)); err != nil {
			return nil, fmt.Errorf("forget the virtual cluster's record: %w", err)
		}
	}
	return nil, endOrder(ctx, a.orders, r.o.Waldur, r.log, orderIDs{r.in.OfferingUUID, r.in.OrderUUID, r.in.ResourceUUID}, notReady, "virtual cluster")
}

// vclusterMetadata is the resource's backend metadata in Waldur: the host
// namespace, and the Rancher cluster while it is imported.
func vclusterMetadata(o *VClusterOffering, ns, clusterID, notReady string) map[string]any {
	md := map[string]any{"host_namespace": ns, "host_cluster_id": o.Settings.HostClusterID}
	if clusterID != "" {
		md["rancher_cluster_id"], md["rancher_cluster_name"] = clusterID, vcluster.ClusterName(ns)
	}
	if notReady != "" {
		md["not_ready"] = notReady
	}
	return md
}

// VClusterRecord is what the cluster pass needs of a virtual cluster: its
// Rancher cluster, to set the resource OK once Rancher reports it ready
// (and erred while it does not).
type VClusterRecord struct {
	ResourceUUID string `json:"resource_uuid"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	ID           string `json:"id,omitempty"`
}

// reimportWait bounds the cluster pass's wait for Rancher to name the v3
// cluster of a re-import; past it the next pass goes on.
const reimportWait = 30 * time.Second

// vcluster is the cluster pass over one virtual cluster. It follows the
// offering's import_to_rancher: a virtual cluster imported while it is
// off is un-imported (its Rancher cluster, with the bindings Rancher keeps
// in it, and Rancher's agent in the virtual cluster go; the virtual
// cluster and its host namespace stay), one not imported while it is on
// is imported as the create imports it. Otherwise Rancher's readiness is
// the state it follows: the resource is erred while Rancher does not
// report the cluster ready and set OK when it does, as the rancher-cluster
// pass does for a cluster that is not active. The pass is the trigger
// because the setting changes with sitebus's configuration, not with an
// order: the first pass after a restart applies it to every resource.
func (p *pass) vcluster(ctx context.Context, e recordEntry, rec Record) (int, error) {
	o, ok := p.vclusters[rec.OfferingUUID]
	if !ok || o.Rancher == nil {
		return 0, nil // another deployment's offering, or no Rancher to import into
	}
	vc := rec.VCluster
	log := p.log.With("resource", vc.ResourceUUID, "cluster", vc.Name)
	switch {
	case !o.Settings.ImportToRancher && vc.ID != "":
		return p.unimport(ctx, e, rec, o, log)
	case !o.Settings.ImportToRancher:
		return 0, nil
	case vc.ID == "":
		return p.reimport(ctx, e, rec, o, log)
	}
	pc, err := o.Rancher.GetProvisioningCluster(ctx, vc.Name)
	if err != nil {
		return 0, fmt.Errorf("rancher cluster %s/%s: %w", o.Settings.FleetWorkspace, vc.Name, err)
	}
	reason := ""
	if !pc.Ready {
		reason = fmt.Sprintf("Rancher does not report cluster %s/%s ready", o.Settings.FleetWorkspace, vc.Name)
		if rec.Erred != "" {
			reason = rec.Erred // the reason Waldur already shows: no second set_as_erred
		}
	}
	if told, err := p.standing(ctx, o.Waldur, log, vc.ResourceUUID, reason, rec.Erred); err != nil || !told {
		return 0, err
	}
	rec.Erred = reason
	return 1, p.putRecord(ctx, e, rec)
}

func (p *pass) putRecord(ctx context.Context, e recordEntry, rec Record) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return p.records.Update(ctx, e.Key, raw, e.Rev)
}

// unimport takes an imported virtual cluster out of Rancher: the Rancher
// cluster when it is the resource's (Rancher deletes the cluster's role
// template bindings with it), then Rancher's agent in the virtual
// cluster. A resource erred for readiness is set OK: without an import
// there is no readiness to wait for.
func (p *pass) unimport(ctx context.Context, e recordEntry, rec Record, o *VClusterOffering, log *slog.Logger) (int, error) {
	vc := rec.VCluster
	ref := rancher.ClusterRef{Name: vc.Name, ID: vc.ID, ResourceUUID: vc.ResourceUUID}
	if err := o.Rancher.DeleteCluster(ctx, ref); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return 0, fmt.Errorf("un-import: delete Rancher cluster %s: %w", ref, err)
	}
	cfg, err := o.Host.VirtualConfig(ctx, vc.Namespace)
	switch {
	case err == nil:
		if err := o.Virtual.RemoveAgent(ctx, cfg); err != nil {
			return 0, fmt.Errorf("un-import: remove Rancher's agent from the virtual cluster: %w", err)
		}
	case errors.Is(err, vcluster.ErrNoKubeconfig) || errors.Is(err, backend.ErrNotFound):
		// No virtual cluster to reach: no agent in it.
	default:
		return 0, fmt.Errorf("un-import: reach the virtual cluster: %w", err)
	}
	if _, err := p.standing(ctx, o.Waldur, log, vc.ResourceUUID, "", rec.Erred); err != nil {
		return 0, err
	}
	if err := o.Waldur.SetResourceBackendMetadata(ctx, vc.ResourceUUID, vclusterMetadata(o, vc.Namespace, "", "")); err != nil {
		return 0, fmt.Errorf("set_backend_metadata: %w", err)
	}
	rec.Erred, vc.ID = "", ""
	log.Info("cluster pass: virtual cluster un-imported from Rancher (import_to_rancher is off)", "v3", ref.ID)
	return 1, p.putRecord(ctx, e, rec)
}

// reimport imports a virtual cluster that is not in Rancher while
// import_to_rancher is on, by the create's steps: the provisioning
// cluster, its v3 id, the registration token's manifest applied into the
// virtual cluster. Each step is idempotent, so a pass cut short is
// finished by the next. Readiness is judged from the next pass on, as
// the agent needs a moment to connect.
func (p *pass) reimport(ctx context.Context, e recordEntry, rec Record, o *VClusterOffering, log *slog.Logger) (int, error) {
	vc := rec.VCluster
	virtual := func(ctx context.Context) (*rest.Config, error) { return o.Host.VirtualConfig(ctx, vc.Namespace) }
	if _, err := virtual(ctx); err != nil {
		return 0, fmt.Errorf("re-import: reach the virtual cluster: %w", err)
	}
	_, skipped, err := importInto(ctx, o, vc.Namespace, vc.ResourceUUID)
	if err != nil || skipped {
		return 0, err
	}
	id, err := o.Rancher.WaitV3ClusterID(ctx, vc.Name, reimportWait)
	if err != nil {
		return 0, err
	}
	ref := rancher.ClusterRef{Name: vc.Name, ID: id, ResourceUUID: vc.ResourceUUID}
	n, err := installAgent(ctx, o, ref, virtual)
	if err != nil {
		return 0, fmt.Errorf("re-import: %w", err)
	}
	if err := o.Waldur.SetResourceBackendMetadata(ctx, vc.ResourceUUID, vclusterMetadata(o, vc.Namespace, id, "")); err != nil {
		return 0, fmt.Errorf("set_backend_metadata: %w", err)
	}
	vc.ID = id
	log.Info("cluster pass: virtual cluster imported into Rancher (import_to_rancher is on)", "v3", id, "objects", n)
	return 1, p.putRecord(ctx, e, rec)
}

// VClusterInputOf is the saga input of a vcluster order.
func VClusterInputOf(ctx context.Context, o *VClusterOffering, offeringUUID string, order *waldur.Order) (VClusterInput, error) {
	resUUID := order.MarketplaceResourceUUID
	if resUUID == "" {
		resUUID = order.ResourceUUID
	}
	res, err := o.Waldur.GetResource(ctx, resUUID)
	if err != nil {
		return VClusterInput{}, fmt.Errorf("get resource %s: %w", resUUID, err)
	}
	return VClusterInput{
		OfferingUUID: offeringUUID, OrderUUID: events.HexUUID(order.UUID), ResourceUUID: res.UUID,
		Resource: ResourceRef{UUID: res.UUID, Name: res.Name, Slug: res.Slug, BackendID: res.BackendID,
			ProjectUUID: res.ProjectUUID, ProjectSlug: res.ProjectSlug, ProjectName: res.ProjectName,
			CustomerUUID: res.CustomerUUID, CustomerSlug: res.CustomerSlug, CustomerName: res.CustomerName},
		Limits: order.Limits, Attributes: order.Attributes,
	}, nil
}

// registerVCluster registers the vcluster sagas and their activities.
func registerVCluster(coord *saga.Coordinator, cfg Config, plans PlanStore, groups Groups, members Members, log *slog.Logger) error {
	for hex, o := range cfg.VClusters {
		if o == nil || o.Waldur == nil || o.Host == nil || o.Virtual == nil || (o.Settings.ImportToRancher && o.Rancher == nil) {
			return fmt.Errorf("cluster-provisioner: vcluster offering %s lacks its Waldur, host, virtual cluster or Rancher client", hex)
		}
	}
	t := cfg.Timeouts
	t.setDefaults()
	acts := &vclusterActivities{offerings: cfg.VClusters, orders: cfg.Orders, plans: plans, groups: groups, members: members, log: log, poll: t.Poll}
	for name, fn := range acts.all() {
		coord.RegisterActivity(name, fn)
	}
	for _, def := range vclusterDefinitions(cfg.Timeouts) {
		if err := coord.Register(def); err != nil {
			return err
		}
	}
	return nil
}
