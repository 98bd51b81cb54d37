package provisioner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/saga"
)

// The step of both vcluster sagas that makes or removes the virtual
// cluster through the offering's driver (driver in backend_settings). The
// external driver has nothing to do there: someone else brings the
// kubeconfig Secret the next step waits for.
const (
	stepVCRelease    = "release"
	actVCInstall     = "vcluster.install"
	actVCUninstall   = "vcluster.uninstall"
	driverNothingMsg = "nothing (driver external: the kubeconfig Secret is brought by someone else)"
)

// VClusterDriver makes the virtual cluster in its host namespace
// (*vcluster.HelmDriver for driver helm, *vcluster.PlatformDriver for
// driver platform).
type VClusterDriver interface {
	// Install makes or updates the resource's virtual cluster in ns; a
	// second install of the same one changes nothing, and one of that
	// name that is not the resource's is refused (backend.ErrNotManaged).
	Install(ctx context.Context, ns, resourceUUID, kubernetesVersion string, limits map[string]float64) (vcluster.ReleaseResult, error)
	// Uninstall removes the resource's virtual cluster from ns, reporting
	// whether there was one.
	Uninstall(ctx context.Context, ns, resourceUUID string) (bool, error)
}

var (
	_ VClusterDriver = (*vcluster.HelmDriver)(nil)
	_ VClusterDriver = (*vcluster.PlatformDriver)(nil)
)

// VClusterReleaseOutput is the release step's: the Helm release (the
// VirtualClusterInstance for the platform driver) and what the install
// did (vcluster.ReleaseInstalled, …); empty for the external driver.
type VClusterReleaseOutput struct {
	Release  string `json:"release,omitempty"`
	Revision int    `json:"revision,omitempty"`
	Action   string `json:"action,omitempty"`
}

// installVCluster makes the virtual cluster through the driver, with the
// order's kubernetes_version and its cpu and ram limits (attributes over
// the order's limits, as the quota has them).
func (a *vclusterActivities) installVCluster(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || r.o.Driver == nil {
		return nil, err
	}
	attrs, err := vcluster.DecodeAttributes(r.in.Attributes)
	if err != nil {
		return nil, err
	}
	limits, err := r.limits()
	if err != nil {
		return nil, err
	}
	res, err := r.o.Driver.Install(ctx, r.ns, r.in.ResourceUUID, attrs.KubernetesVersion, limits)
	if err != nil {
		return nil, err
	}
	r.log.Info("virtual cluster's release", "release", res.Name, "revision", res.Revision, "action", res.Action)
	return json.Marshal(VClusterReleaseOutput{Release: res.Name, Revision: res.Revision, Action: res.Action})
}

// uninstallVCluster removes the virtual cluster through the driver: on
// terminate, and as the create's compensation. Only the resource's own
// release is removed (the driver checks its marks), so a compensation
// after a refused install leaves the foreign one alone.
func (a *vclusterActivities) uninstallVCluster(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in)
	if err != nil || r.o.Driver == nil {
		return nil, err
	}
	if in.Compensating {
		var out VClusterReleaseOutput
		if ok, err := in.DecodeOutput(stepVCRelease, &out); err != nil || !ok || out.Release == "" {
			return nil, err
		}
	}
	had, err := r.o.Driver.Uninstall(ctx, r.ns, r.in.ResourceUUID)
	if err != nil {
		return nil, err
	}
	r.log.Info("virtual cluster's release removed", "existed", had)
	return nil, nil
}

// explainRelease says what the release step of def would do.
func explainRelease(o *VClusterOffering, def, ns string) string {
	switch o.Settings.Driver {
	case vcluster.DriverHelm:
	case vcluster.DriverPlatform:
		return explainPlatform(o.Settings, def, ns)
	default:
		return driverNothingMsg
	}
	release, err := vcluster.ReleaseName(ns)
	if err != nil {
		return "refuses the order: " + err.Error()
	}
	if def == VClusterCreate {
		return fmt.Sprintf("installs (or upgrades) sitebus's vCluster chart as Helm release %s in %s", release, ns)
	}
	return fmt.Sprintf("uninstalls the Helm release %s from %s", release, ns)
}

// explainPlatform says what the release step of def would do with the
// platform driver.
func explainPlatform(s vcluster.Settings, def, ns string) string {
	name, err := vcluster.InstanceName(ns)
	if err != nil {
		return "refuses the order: " + err.Error()
	}
	p := vcluster.PlatformNamespace(s.PlatformProject)
	if def == VClusterCreate {
		return fmt.Sprintf("creates (or updates) VirtualClusterInstance %s in %s from template %s, on platform cluster %s in %s",
			name, p, s.PlatformTemplate, s.PlatformCluster, ns)
	}
	return fmt.Sprintf("deletes VirtualClusterInstance %s from %s", name, p)
}
