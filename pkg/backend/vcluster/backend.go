package vcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/backend/kubeusage"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Components of the offering, the quota of the host namespace: cpu in
// cores, ram and storage in GiB (as the k8s-ut-namespace plugin counts).
const (
	ComponentCPU     = "cpu"
	ComponentRAM     = "ram"
	ComponentStorage = "storage"
)

// Annotations sitebus keeps on the host namespace for the flags.
const (
	AnnotationStatus       = "sitebus.io/status"
	AnnotationLimitsBefore = "sitebus.io/limits-before"
)

// quotaFields map components to ResourceQuota fields. Requests are what
// the scheduler reserves, hence what the usage reporter counts too.
var quotaFields = map[string]corev1.ResourceName{
	ComponentCPU: corev1.ResourceRequestsCPU, ComponentRAM: corev1.ResourceRequestsMemory, ComponentStorage: corev1.ResourceRequestsStorage,
}

// Quotas of the flags: nothing while paused, a minimum while downscaled.
var (
	pausedLimits     = map[string]float64{ComponentCPU: 0, ComponentRAM: 0, ComponentStorage: 0}
	downscaledLimits = map[string]float64{ComponentCPU: 1, ComponentRAM: 1, ComponentStorage: 1}
)

// Options are how a Backend reaches the host cluster.
type Options struct {
	Logger *slog.Logger
	// RESTConfig reaches the host; nil means Settings.HostKubeconfigPath
	// (or the in-cluster configuration).
	RESTConfig    *rest.Config
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Backend keeps the host side of virtual clusters: namespace vc-<slug>,
// its quota and limit range, usage, and the kubeconfig Secret.
type Backend struct {
	settings Settings
	host     kubernetes.Interface
	log      *slog.Logger
	// hostConfig is how New reached the host (nil from NewWithClient),
	// for the helm driver's own clients.
	hostConfig *rest.Config
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.UsageLister = (*Backend)(nil)
)

// New returns the backend of an offering's settings; it does not contact
// the host.
func New(s Settings, opts Options) (*Backend, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var cfg *rest.Config
	var err error
	switch {
	case opts.RESTConfig != nil:
		cfg = rest.CopyConfig(opts.RESTConfig)
	case s.HostKubeconfigPath != "":
		if cfg, err = clientcmd.BuildConfigFromFlags("", s.HostKubeconfigPath); err != nil {
			return nil, fmt.Errorf("%s: host_kubeconfig_path %s: %w", Type, s.HostKubeconfigPath, err)
		}
	default:
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("%s: no host_kubeconfig_path and not in a cluster: %w", Type, err)
		}
	}
	kubeapi.SetDefaults(cfg)
	kubeapi.GuardAnswers(cfg, "the host cluster")
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: host client: %w", Type, err)
	}
	b := NewWithClient(s, cs, opts.Logger)
	b.hostConfig = cfg
	return b, nil
}

// NewWithClient is New over a given host client.
func NewWithClient(s Settings, host kubernetes.Interface, log *slog.Logger) *Backend {
	return &Backend{settings: s, host: host, log: backend.Logger(log, Type)}
}

// Settings are the backend's settings.
func (b *Backend) Settings() Settings { return b.settings }

// Type implements backend.Backend.
func (b *Backend) Type() string { return Type }

// BackendID is the host namespace, vc-<slug>.
func (b *Backend) BackendID(r backend.Resource) (string, error) { return NamespaceName(r) }

// apiErr turns an API server error into package fault's kinds.
func apiErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return &kubeapi.Error{Kind: kubeapi.Kind(err), Msg: what + ": " + err.Error(), Err: err}
}

// ours reports whether the namespace carries sitebus's marks for
// resourceUUID ("" accepts any resource's).
func ours(ns *corev1.Namespace, resourceUUID string) bool {
	a := ns.Annotations
	return a[AnnotationManaged] == "true" && ns.Labels[LabelManaged] == "true" &&
		(resourceUUID == "" || a[AnnotationResourceUUID] == resourceUUID)
}

func notOurs(ns *corev1.Namespace, resourceUUID string) error {
	if ns.Annotations[AnnotationManaged] != "true" || ns.Labels[LabelManaged] != "true" {
		return fault.Errorf(fault.NotManaged, "Namespace %s exists on the host cluster and is not managed by sitebus (no %s: \"true\"); refusing to touch it",
			ns.Name, AnnotationManaged)
	}
	return fault.Errorf(fault.NotManaged, "Namespace %s belongs to Waldur resource %q, not %q; refusing to touch it",
		ns.Name, ns.Annotations[AnnotationResourceUUID], resourceUUID)
}

// namespace reads a namespace sitebus manages (ErrNotFound when absent,
// ErrNotManaged when it is not sitebus's).
func (b *Backend) namespace(ctx context.Context, name, resourceUUID string) (*corev1.Namespace, error) {
	ns, err := b.host.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, apiErr("get namespace "+name, err)
	}
	if !ours(ns, resourceUUID) {
		return nil, notOurs(ns, resourceUUID)
	}
	return ns, nil
}

// NamespaceProject is the Rancher project the host namespace ns is in,
// <host cluster>:<project> as its annotation says ("" in none): the
// project its create placed it in (rancher_project_id or
// rancher_project_map), or the one it was moved to in Rancher since, as
// Loft's Rancher operator reads it.
func (b *Backend) NamespaceProject(ctx context.Context, ns string) (string, error) {
	have, err := b.host.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return "", apiErr("get namespace "+ns, err)
	}
	return have.Annotations[RancherProjectKey], nil
}

// EnsureNamespace makes the host namespace of r with sitebus's marks and
// the Rancher project placement, or returns the one it made before
// (existed true). A namespace of that name that is not r's is refused,
// untouched.
func (b *Backend) EnsureNamespace(ctx context.Context, r backend.Resource) (name string, existed bool, err error) {
	if name, err = NamespaceName(r); err != nil {
		return "", false, err
	}
	if r.UUID == "" {
		return "", false, fault.Errorf(fault.Invalid, "namespace %s: the Waldur resource UUID is required", name)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{LabelManaged: "true"},
		Annotations: map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: r.UUID},
	}}
	if p := b.settings.ProjectIDFor(r.ProjectUUID, r.CustomerUUID); p != "" {
		_, project, _ := cutLast(p, ":")
		ns.Labels[RancherProjectKey] = project
		ns.Annotations[RancherProjectKey] = p
	}
	_, err = b.host.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err == nil {
		b.log.Info("created host namespace", "namespace", name, "resource", r.UUID)
		return name, false, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", false, apiErr("create namespace "+name, err)
	}
	have, err := b.namespace(ctx, name, r.UUID)
	if err != nil {
		return "", false, err
	}
	if have.DeletionTimestamp != nil {
		return "", false, fault.Errorf(fault.Conflict, "namespace %s is being deleted; retry once it is gone", name)
	}
	return name, true, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return "", s, false
}

// Create makes the host namespace with its quota and limit range. The
// virtual cluster and its import are the create saga's.
func (b *Backend) Create(ctx context.Context, r backend.Resource) (backend.Created, error) {
	if err := checkQuota(r.Limits); err != nil {
		return backend.Created{}, err
	}
	name, existed, err := b.EnsureNamespace(ctx, r)
	if err != nil {
		return backend.Created{}, err
	}
	if existed {
		limits, err := b.Limits(ctx, name)
		return backend.Created{BackendID: name, Limits: limits, Existed: true, Metadata: b.metadata(name)}, err
	}
	if _, err := b.SetLimits(ctx, name, r.Limits); err != nil {
		return backend.Created{}, err
	}
	if err := b.EnsureLimitRange(ctx, name); err != nil {
		return backend.Created{}, err
	}
	return backend.Created{BackendID: name, Limits: r.Limits, Metadata: b.metadata(name)}, nil
}

// EnsureLimitRange gives the namespace's containers default requests, so
// pods that name none are still admitted under a quota on requests.
func (b *Backend) EnsureLimitRange(ctx context.Context, ns string) error {
	_, err := b.host.CoreV1().LimitRanges(ns).Create(ctx, limitRange(ns), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return apiErr("create limit range in "+ns, err)
}

// Exists implements backend.Backend.
func (b *Backend) Exists(ctx context.Context, backendID string) (bool, error) {
	_, err := b.host.CoreV1().Namespaces().Get(ctx, backendID, metav1.GetOptions{})
	return backend.Found(apiErr("get namespace "+backendID, err))
}

// Delete removes the host namespace (and with it the virtual cluster's
// objects there); an absent one is done, another's refused.
func (b *Backend) Delete(ctx context.Context, backendID string) error {
	return b.DeleteNamespace(ctx, backendID, "")
}

// DeleteNamespace deletes namespace name when it is resourceUUID's ("" any
// of sitebus's).
func (b *Backend) DeleteNamespace(ctx context.Context, name, resourceUUID string) error {
	ns, err := b.namespace(ctx, name, resourceUUID)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp != nil {
		return nil
	}
	err = b.host.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apiErr("delete namespace "+name, err)
	}
	b.log.Info("deleted host namespace", "namespace", name)
	return nil
}

// maxQuota is the largest limit per component that a ResourceQuota holds
// as given: Kubernetes keeps quantities in int64 (CPU read in millicores,
// memory and storage in bytes). A larger one is stored clamped and reads
// back smaller, so every quota and drift pass would find it changed.
var maxQuota = map[string]float64{
	ComponentCPU:     math.MaxInt64 / 1000,
	ComponentRAM:     math.MaxInt64 >> 30,
	ComponentStorage: math.MaxInt64 >> 30,
}

// checkQuota refuses limits that are not numbers, negative, or larger
// than a ResourceQuota holds.
func checkQuota(limits map[string]float64) error {
	if err := backend.CheckLimits(limits, nil); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(limits)) {
		if m, ok := maxQuota[k]; ok && limits[k] > m {
			return fault.Errorf(fault.Invalid, "Resource limit %s is %s, more than a Kubernetes quota holds (at most %s)",
				k, strconv.FormatFloat(limits[k], 'g', -1, 64), strconv.FormatFloat(m, 'f', 0, 64))
		}
	}
	return nil
}

// toQuota converts limits that checkQuota accepted to quota fields.
func toQuota(limits map[string]float64) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range limits {
		f, ok := quotaFields[k]
		if !ok {
			continue
		}
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if k != ComponentCPU {
			s += "Gi"
		}
		out[f] = resource.MustParse(s)
	}
	return out
}

func fromQuota(hard corev1.ResourceList) map[string]float64 {
	out := map[string]float64{}
	for k, f := range quotaFields {
		if q, ok := hard[f]; ok {
			out[k] = kubeusage.Value(&q, k != ComponentCPU)
		}
	}
	return out
}

// SetLimits implements backend.Backend: the ResourceQuota of the host
// namespace. While paused or downscaled the limits are remembered for
// Restore.
func (b *Backend) SetLimits(ctx context.Context, backendID string, limits map[string]float64) (bool, error) {
	if err := checkQuota(limits); err != nil {
		return false, err
	}
	ns, err := b.namespace(ctx, backendID, "")
	if err != nil {
		return false, err
	}
	if backend.ParseStatus(ns.Annotations[AnnotationStatus]) != backend.StatusActive {
		return b.annotate(ctx, ns, map[string]string{AnnotationLimitsBefore: encodeLimits(limits)})
	}
	return b.setQuota(ctx, backendID, limits)
}

func (b *Backend) setQuota(ctx context.Context, ns string, limits map[string]float64) (bool, error) {
	if err := checkQuota(limits); err != nil {
		return false, err
	}
	hard := toQuota(limits)
	rq, err := b.host.CoreV1().ResourceQuotas(ns).Get(ctx, QuotaName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		rq = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns,
			Annotations: map[string]string{AnnotationManaged: "true"}}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		_, err = b.host.CoreV1().ResourceQuotas(ns).Create(ctx, rq, metav1.CreateOptions{})
		return err == nil, apiErr("create quota in "+ns, err)
	}
	if err != nil {
		return false, apiErr("get quota in "+ns, err)
	}
	if maps.EqualFunc(rq.Spec.Hard, hard, func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }) {
		return false, nil
	}
	rq.Spec.Hard = hard
	_, err = b.host.CoreV1().ResourceQuotas(ns).Update(ctx, rq, metav1.UpdateOptions{})
	return err == nil, apiErr("update quota in "+ns, err)
}

// Limits implements backend.Backend.
func (b *Backend) Limits(ctx context.Context, backendID string) (map[string]float64, error) {
	rq, err := b.host.CoreV1().ResourceQuotas(backendID).Get(ctx, QuotaName, metav1.GetOptions{})
	if err != nil {
		return nil, apiErr("get quota in "+backendID, err)
	}
	return fromQuota(rq.Spec.Hard), nil
}

func encodeLimits(l map[string]float64) string {
	b, _ := json.Marshal(l)
	return string(b)
}

func (b *Backend) annotate(ctx context.Context, ns *corev1.Namespace, set map[string]string) (bool, error) {
	changed := false
	for k, v := range set {
		if ns.Annotations[k] != v {
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	ns = ns.DeepCopy()
	for k, v := range set {
		if v == "" {
			delete(ns.Annotations, k)
		} else {
			ns.Annotations[k] = v
		}
	}
	_, err := b.host.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	return err == nil, apiErr("update namespace "+ns.Name, err)
}

// setStatus applies a reduced quota, remembering the limits before once.
func (b *Backend) setStatus(ctx context.Context, backendID string, st backend.Status, limits map[string]float64) error {
	ns, err := b.namespace(ctx, backendID, "")
	if err != nil {
		return err
	}
	set := map[string]string{AnnotationStatus: string(st)}
	if backend.ParseStatus(ns.Annotations[AnnotationStatus]) == backend.StatusActive {
		before, err := b.Limits(ctx, backendID)
		if err != nil && !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		set[AnnotationLimitsBefore] = encodeLimits(before)
	}
	if _, err := b.setQuota(ctx, backendID, limits); err != nil {
		return err
	}
	_, err = b.annotate(ctx, ns, set)
	return err
}

// Pause implements backend.Backend.
func (b *Backend) Pause(ctx context.Context, backendID string) error {
	return b.setStatus(ctx, backendID, backend.StatusPaused, pausedLimits)
}

// Downscale implements backend.Backend.
func (b *Backend) Downscale(ctx context.Context, backendID string) error {
	return b.setStatus(ctx, backendID, backend.StatusDownscaled, downscaledLimits)
}

// Restore implements backend.Backend: the limits remembered at Pause or
// Downscale come back.
func (b *Backend) Restore(ctx context.Context, backendID string) error {
	ns, err := b.namespace(ctx, backendID, "")
	if err != nil {
		return err
	}
	if backend.ParseStatus(ns.Annotations[AnnotationStatus]) == backend.StatusActive {
		return nil
	}
	var before map[string]float64
	if s := ns.Annotations[AnnotationLimitsBefore]; s != "" {
		if err := json.Unmarshal([]byte(s), &before); err != nil {
			return fault.Errorf(fault.Invalid, "namespace %s: %s is not a JSON object of limits", backendID, AnnotationLimitsBefore)
		}
	}
	if _, err := b.setQuota(ctx, backendID, before); err != nil {
		return err
	}
	_, err = b.annotate(ctx, ns, map[string]string{AnnotationStatus: "", AnnotationLimitsBefore: ""})
	return err
}

// Usage implements backend.Backend.
func (b *Backend) Usage(ctx context.Context, backendID string) (map[string]float64, error) {
	all, err := b.UsageAll(ctx, []string{backendID})
	if err != nil {
		return nil, err
	}
	return all[backendID], nil
}

// UsageAll implements backend.UsageLister: pod requests and PVC storage of
// each host namespace, as kubeusage defines usage for every Kubernetes
// backend (one pods and one PVCs list per namespace).
func (b *Backend) UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error) {
	sums := kubeusage.New([]string{string(corev1.ResourceCPU), string(corev1.ResourceMemory)}, nil)
	out := map[string]map[string]float64{}
	for _, ns := range backendIDs {
		if ok, err := b.Exists(ctx, ns); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		pods, err := b.host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: kubeusage.PodFieldSelector})
		if err != nil {
			return nil, apiErr("list pods in "+ns, err)
		}
		for i := range pods.Items {
			if err := sums.AddPod(toUnstructured(&pods.Items[i])); err != nil {
				return nil, err
			}
		}
		pvcs, err := b.host.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, apiErr("list PVCs in "+ns, err)
		}
		for i := range pvcs.Items {
			if err := sums.AddPVC(toUnstructured(&pvcs.Items[i])); err != nil {
				return nil, err
			}
		}
		out[ns] = map[string]float64{
			ComponentCPU:     kubeusage.Value(sums.Get(string(corev1.ResourceCPU), ns), false),
			ComponentRAM:     kubeusage.Value(sums.Get(string(corev1.ResourceMemory), ns), true),
			ComponentStorage: kubeusage.Value(sums.Get(kubeusage.Storage, ns), true),
		}
	}
	return out, nil
}

func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return &unstructured.Unstructured{}
	}
	return &unstructured.Unstructured{Object: m}
}

func (b *Backend) metadata(ns string) map[string]any {
	return map[string]any{"host_namespace": ns, "host_cluster_id": b.settings.HostClusterID}
}

// Metadata implements backend.Backend.
func (b *Backend) Metadata(_ context.Context, backendID string) (map[string]any, error) {
	return b.metadata(backendID), nil
}

// List implements backend.Backend: the host namespaces sitebus made.
func (b *Backend) List(ctx context.Context) ([]backend.Object, error) {
	l, err := b.host.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true"})
	if err != nil {
		return nil, apiErr("list namespaces", err)
	}
	var out []backend.Object
	for i := range l.Items {
		ns := &l.Items[i]
		if ours(ns, "") {
			out = append(out, backend.Object{BackendID: ns.Name, Status: backend.ParseStatus(ns.Annotations[AnnotationStatus])})
		}
	}
	slices.SortFunc(out, func(a, b backend.Object) int {
		switch {
		case a.BackendID < b.BackendID:
			return -1
		case a.BackendID > b.BackendID:
			return 1
		}
		return 0
	})
	return out, nil
}

// Ping implements backend.Backend.
func (b *Backend) Ping(ctx context.Context) error {
	_, err := b.host.Discovery().ServerVersion()
	return apiErr("host cluster version", err)
}

// Diagnostics implements backend.Backend.
func (b *Backend) Diagnostics(ctx context.Context) (map[string]any, error) {
	out := map[string]any{"driver": b.settings.Driver, "host_cluster_id": b.settings.HostClusterID,
		"rancher_project_id": b.settings.RancherProjectID, "rancher_project_map": b.settings.RancherProjectMap, "import_to_rancher": b.settings.ImportToRancher, "fleet_workspace": b.settings.FleetWorkspace}
	if v, err := b.host.Discovery().ServerVersion(); err == nil {
		out["host_version"] = v.GitVersion
	} else {
		out["host_error"] = err.Error()
	}
	objs, err := b.List(ctx)
	if err != nil {
		return out, err
	}
	out["virtual_clusters"] = len(objs)
	return out, nil
}
