package vcluster

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sitebus/sitebus/pkg/fault"
)

// chartFiles is the vCluster chart the helm driver installs (chart/, its
// README says what is in it). "all:" keeps templates/_helpers.tpl, which
// a plain pattern would leave out for its leading underscore.
//
//go:embed all:chart
var chartFiles embed.FS

// LabelResourceUUID is the Helm release label naming the Waldur resource a
// release of the helm driver is (with LabelManaged "true"): Helm keeps
// a release's labels on its storage Secrets, where no annotation goes.
const LabelResourceUUID = "sitebus.io/resource-uuid"

// Release actions of HelmDriver.Install.
const (
	ReleaseInstalled = "installed"
	ReleaseUpgraded  = "upgraded"
	ReleaseUnchanged = "unchanged"
)

// MaxReleaseName is Helm's limit on a release name: its StatefulSet's
// pods carry a controller-revision-hash label of the name and a hash, and
// a label value holds 63 characters.
const MaxReleaseName = 53

// helmTimeout bounds one install, upgrade or uninstall: without --wait
// Helm only writes objects, so a minute is ample.
const helmTimeout = time.Minute

// Chart loads the embedded vCluster chart.
func Chart() (*chart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(chartFiles, "chart", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFiles.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: strings.TrimPrefix(p, "chart/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the embedded vCluster chart: %w", err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load the embedded vCluster chart: %w", err)
	}
	return c, nil
}

// ReleaseName is the Helm release of host namespace vc-<slug>: the slug,
// so that vCluster's own names (Service <release>, kubeconfig Secret
// vc-<release>) are those sitebus reads. A slug too long for Helm is
// refused, not shortened, as NamespaceName refuses one.
func ReleaseName(ns string) (string, error) {
	return slugName(ns, "the Helm release", "Helm", MaxReleaseName)
}

// slugName is the slug of host namespace vc-<slug> as the name of what
// (a release, an instance), refused when it is longer than max, the
// limit of by: a shortened name could be another resource's.
func slugName(ns, what, by string, max int) (string, error) {
	name, ok := strings.CutPrefix(ns, NamespacePrefix)
	if !ok || name == "" {
		return "", fault.Errorf(fault.Invalid, "namespace %s is not a virtual cluster's (%s<slug>)", ns, NamespacePrefix)
	}
	if len(name) > max {
		return "", fault.Errorf(fault.Invalid, "%s of %s would be %q, %d characters; %s allows at most %d: use a shorter resource slug",
			what, ns, name, len(name), by, max)
	}
	return name, nil
}

// ImageVersion is the tag of vCluster's Kubernetes image for an order's
// kubernetes_version: with a leading v, and a minor version alone taken
// as its first release (v1.31 is v1.31.0), the one tag every minor has.
func ImageVersion(v string) string {
	v = "v" + strings.TrimPrefix(v, "v")
	core, suffix := v, ""
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		core, suffix = v[:i], v[i:]
	}
	if strings.Count(core, ".") == 1 {
		core += ".0"
	}
	return core + suffix
}

// Control plane requests, the chart's defaults: an order whose limits are
// smaller gets its limits as requests, so the pod stays valid.
const (
	requestCPU   = 0.2
	requestRAMGi = 0.25
)

// HelmValues are the chart values of a resource's virtual cluster:
// sitebus's marks, the Kubernetes version of the order (kubernetes_version;
// "" keeps the chart's) and its cpu (cores) and ram (GiB) as the control
// plane's limits, the most it may take of the namespace's quota. A zero or
// absent limit keeps the chart's.
func HelmValues(resourceUUID, kubernetesVersion string, limits map[string]float64) map[string]any {
	v := map[string]any{"sitebus": map[string]any{"resourceUUID": resourceUUID}}
	if kubernetesVersion != "" {
		v["kubernetes"] = map[string]any{"version": ImageVersion(kubernetesVersion)}
	}
	req, lim := map[string]any{}, map[string]any{}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if c := limits[ComponentCPU]; c > 0 {
		lim["cpu"] = num(c)
		if c < requestCPU {
			req["cpu"] = num(c)
		}
	}
	if r := limits[ComponentRAM]; r > 0 {
		lim["memory"] = num(r) + "Gi"
		if r < requestRAMGi {
			req["memory"] = num(r) + "Gi"
		}
	}
	if len(lim) > 0 {
		res := map[string]any{"limits": lim}
		if len(req) > 0 {
			res["requests"] = req
		}
		v["resources"] = res
	}
	return v
}

// ReleaseResult is what HelmDriver.Install did.
type ReleaseResult struct {
	Name     string
	Revision int
	// Action is ReleaseInstalled, ReleaseUpgraded or ReleaseUnchanged.
	Action string
}

// HelmDriver is the helm driver: it installs the embedded vCluster chart
// into a host namespace with the Helm SDK, the release stored as Helm
// stores it (Secrets sh.helm.release.v1.<release>.v<n>), so `helm list`
// on the host shows sitebus's virtual clusters.
type HelmDriver struct {
	cfg   *rest.Config
	chart *chart.Chart
	log   *slog.Logger
}

// NewHelmDriver is the helm driver over the host cluster's cfg.
func NewHelmDriver(cfg *rest.Config, log *slog.Logger) (*HelmDriver, error) {
	if cfg == nil {
		return nil, errors.New("helm driver: no host cluster configuration")
	}
	c, err := Chart()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HelmDriver{cfg: rest.CopyConfig(cfg), chart: c, log: log}, nil
}

// HelmDriver is the helm driver over the backend's host cluster; only a
// Backend made by New knows how to reach it.
func (b *Backend) HelmDriver() (*HelmDriver, error) {
	return NewHelmDriver(b.hostConfig, b.log)
}

// ChartVersion is the embedded chart's version.
func (d *HelmDriver) ChartVersion() string { return d.chart.Metadata.Version }

func (d *HelmDriver) configuration(ns string) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	logf := func(format string, v ...any) { d.log.Debug(fmt.Sprintf(format, v...), "namespace", ns) }
	if err := cfg.Init(restGetter{cfg: d.cfg, ns: ns}, ns, "secret", logf); err != nil {
		return nil, fmt.Errorf("helm in %s: %w", ns, err)
	}
	return cfg, nil
}

// marks are the release labels of resourceUUID's release.
func marks(resourceUUID string) map[string]string {
	return map[string]string{LabelManaged: "true", LabelResourceUUID: resourceUUID}
}

func oursRelease(r *release.Release, resourceUUID string) error {
	if r.Labels[LabelManaged] != "true" {
		return fault.Errorf(fault.NotManaged, "Helm release %s in %s exists and is not managed by sitebus (no label %s=true); refusing to touch it",
			r.Name, r.Namespace, LabelManaged)
	}
	if r.Labels[LabelResourceUUID] != resourceUUID {
		return fault.Errorf(fault.NotManaged, "Helm release %s in %s belongs to Waldur resource %q, not %q; refusing to touch it",
			r.Name, r.Namespace, r.Labels[LabelResourceUUID], resourceUUID)
	}
	return nil
}

// last is the release's newest revision (nil when there is none).
func last(cfg *action.Configuration, name string) (*release.Release, error) {
	r, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s: %w", name, err)
	}
	return r, nil
}

// normalize gives values the shape Helm stores them in (JSON's), so a
// stored release's values compare equal to the same values given again.
func normalize(v map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(raw, &out)
}

// Install makes resourceUUID's virtual cluster in host namespace ns, or
// brings the release there up to date: a release of the same chart
// version and values is left as it is (unchanged), another of this
// resource's is upgraded, and a release of that name that is not this
// resource's is refused, untouched. A revision left pending by a
// sitebus that was killed mid-operation is marked failed first, as
// `helm` users do by hand, since the saga is its only writer.
func (d *HelmDriver) Install(ctx context.Context, ns, resourceUUID, kubernetesVersion string, limits map[string]float64) (ReleaseResult, error) {
	name, err := ReleaseName(ns)
	if err != nil {
		return ReleaseResult{}, err
	}
	if resourceUUID == "" {
		return ReleaseResult{}, fault.Errorf(fault.Invalid, "Helm release %s: the Waldur resource UUID is required", name)
	}
	vals, err := normalize(HelmValues(resourceUUID, kubernetesVersion, limits))
	if err != nil {
		return ReleaseResult{}, err
	}
	cfg, err := d.configuration(ns)
	if err != nil {
		return ReleaseResult{}, err
	}
	prev, err := last(cfg, name)
	if err != nil {
		return ReleaseResult{}, err
	}
	if prev != nil {
		if err := oursRelease(prev, resourceUUID); err != nil {
			return ReleaseResult{}, err
		}
		if prev.Info.Status.IsPending() {
			prev.SetStatus(release.StatusFailed, "interrupted: sitebus stopped during "+string(prev.Info.Status))
			if err := cfg.Releases.Update(prev); err != nil {
				return ReleaseResult{}, fmt.Errorf("mark interrupted Helm release %s failed: %w", name, err)
			}
		}
		if prev.Info.Status == release.StatusDeployed && prev.Chart != nil && prev.Chart.Metadata.Version == d.chart.Metadata.Version &&
			reflect.DeepEqual(prev.Config, vals) {
			return ReleaseResult{Name: name, Revision: prev.Version, Action: ReleaseUnchanged}, nil
		}
		deployed, err := cfg.Releases.DeployedAll(name)
		if err == nil && len(deployed) > 0 {
			up := action.NewUpgrade(cfg)
			up.Namespace, up.ResetValues, up.MaxHistory, up.Timeout, up.Labels = ns, true, 5, helmTimeout, marks(resourceUUID)
			rel, err := up.RunWithContext(ctx, name, d.chart, vals)
			if err != nil {
				return ReleaseResult{}, fmt.Errorf("helm upgrade %s in %s: %w", name, ns, err)
			}
			d.log.Info("upgraded the virtual cluster's Helm release", "namespace", ns, "release", name, "revision", rel.Version)
			return ReleaseResult{Name: name, Revision: rel.Version, Action: ReleaseUpgraded}, nil
		}
		// Never deployed (an install that failed or was interrupted):
		// install again over it.
	}
	in := action.NewInstall(cfg)
	in.Namespace, in.ReleaseName, in.Timeout, in.Labels = ns, name, helmTimeout, marks(resourceUUID)
	in.Replace = prev != nil
	rel, err := in.RunWithContext(ctx, d.chart, vals)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("helm install %s in %s: %w", name, ns, err)
	}
	d.log.Info("installed the virtual cluster's Helm release", "namespace", ns, "release", name, "revision", rel.Version)
	return ReleaseResult{Name: name, Revision: rel.Version, Action: ReleaseInstalled}, nil
}

// Uninstall removes resourceUUID's release from ns with its objects and
// history; it reports whether there was one. A release of that name that
// is not this resource's is refused, untouched.
func (d *HelmDriver) Uninstall(ctx context.Context, ns, resourceUUID string) (bool, error) {
	name, err := ReleaseName(ns)
	if err != nil {
		return false, err
	}
	cfg, err := d.configuration(ns)
	if err != nil {
		return false, err
	}
	prev, err := last(cfg, name)
	if err != nil || prev == nil {
		return false, err
	}
	if err := oursRelease(prev, resourceUUID); err != nil {
		return false, err
	}
	un := action.NewUninstall(cfg)
	un.Timeout = helmTimeout
	if _, err := un.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return false, fmt.Errorf("helm uninstall %s in %s: %w", name, ns, err)
	}
	d.log.Info("uninstalled the virtual cluster's Helm release", "namespace", ns, "release", name)
	return true, nil
}

// render renders the chart for a resource's values as Helm would install
// it into ns, without a cluster: the manifests, Helm's "---" separated
// stream.
func (d *HelmDriver) render(ns, resourceUUID, kubernetesVersion string, limits map[string]float64) (string, error) {
	name, err := ReleaseName(ns)
	if err != nil {
		return "", err
	}
	in := action.NewInstall(&action.Configuration{})
	in.Namespace, in.ReleaseName, in.DryRun, in.ClientOnly, in.Replace = ns, name, true, true, true
	rel, err := in.Run(d.chart, HelmValues(resourceUUID, kubernetesVersion, limits))
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// restGetter is Helm's view of the host cluster: sitebus's rest.Config
// (with its transport wrapping and answer guards) and the namespace.
type restGetter struct {
	cfg *rest.Config
	ns  string
}

func (g restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

// ToRawKubeConfigLoader only gives the namespace: Helm's client takes the
// release's namespace from it.
func (g restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(clientcmdapi.Config{}, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.ns}})
}
