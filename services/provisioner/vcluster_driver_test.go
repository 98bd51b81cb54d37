package provisioner

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
)

// vcDriver is a driver that records its calls; its virtual cluster
// writes the kubeconfig Secret as vCluster's control plane does once
// installed (bring), and refuse makes Install find a foreign release.
type vcDriver struct {
	mu         sync.Mutex
	installs   []string
	limits     map[string]float64
	uninstalls int
	refuse     bool
	bring      func()
}

func (d *vcDriver) Install(_ context.Context, ns, resourceUUID, version string, limits map[string]float64) (vcluster.ReleaseResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse {
		return vcluster.ReleaseResult{}, fault.Errorf(fault.NotManaged, "Helm release demo in %s exists and is not managed by sitebus", ns)
	}
	d.installs = append(d.installs, ns+" "+resourceUUID+" "+version)
	d.limits = maps.Clone(limits)
	if len(d.installs) == 1 && d.bring != nil {
		d.bring()
	}
	return vcluster.ReleaseResult{Name: strings.TrimPrefix(ns, "vc-"), Revision: 1, Action: vcluster.ReleaseInstalled}, nil
}

func (d *vcDriver) Uninstall(_ context.Context, ns, resourceUUID string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.uninstalls++
	return true, nil
}

func TestVClusterDriverInstallsBeforeTheKubeconfigAndUninstallsOnTerminate(t *testing.T) {
	d := &vcDriver{}
	h := newVCHarnessWith(t, d)
	d.bring = func() { h.bringKubeconfig(t) }
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000001a", `{"name":"demo","cpu":2,"ram":4,"kubernetes_version":"1.31"}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	// The kubeconfig Secret only exists once the driver installed, so the
	// create succeeding shows the release step ran before the wait.
	if want := "vc-demo " + resourceUUID + " 1.31"; len(d.installs) != 1 || d.installs[0] != want {
		t.Fatalf("installs %v, want one: %s", d.installs, want)
	}
	if d.limits["cpu"] != 2 || d.limits["ram"] != 4 {
		t.Errorf("the release's limits %v, want the attributes' cpu 2 and ram 4", d.limits)
	}
	if st, _ := sg.Step(stepVCRelease); !strings.Contains(string(st.Output), `"release":"demo"`) {
		t.Errorf("release step output %s", st.Output)
	}
	sg = h.run(t, VClusterTerminate, "0000000000000000000000000000001b", ``, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if d.uninstalls != 1 {
		t.Fatalf("uninstalls %d, want one", d.uninstalls)
	}
	if _, err := h.host.CoreV1().Namespaces().Get(context.Background(), "vc-demo", metav1.GetOptions{}); err == nil {
		t.Fatal("host namespace left")
	}
}

func TestVClusterDriverRefusingAForeignReleaseErrsAndUninstallsNothing(t *testing.T) {
	d := &vcDriver{refuse: true}
	h := newVCHarnessWith(t, d)
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000001c", `{}`, nil)
	if sg.Status != saga.StatusCompensated || !strings.Contains(sg.Error, "not managed by sitebus") {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	// The release step did not complete, so its compensation does not
	// run: the foreign release is not uninstalled. The namespace step's
	// compensation removes the namespace it made.
	if d.uninstalls != 0 {
		t.Errorf("uninstalls %d, want none of a release that is not ours", d.uninstalls)
	}
	if len(h.w.clusters) != 0 || h.w.done != 0 {
		t.Fatalf("clusters %v done %d", h.w.clusters, h.w.done)
	}
}

func TestVClusterDriverFailingLaterUninstallsTheReleaseItMade(t *testing.T) {
	d := &vcDriver{}
	h := newVCHarnessWith(t, d)
	// The terminal failure is a foreign Rancher cluster of the name, after
	// the release step completed.
	d.bring = func() { h.bringKubeconfig(t) }
	h.w.mu.Lock()
	h.w.foreign["vc-demo"] = true
	h.w.mu.Unlock()
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000001d", `{}`, nil)
	if sg.Status != saga.StatusCompensated {
		t.Fatalf("saga %s: %s, want compensated", sg.Status, sg.Error)
	}
	if d.uninstalls != 1 {
		t.Fatalf("uninstalls %d, want the compensation's one", d.uninstalls)
	}
}

func TestExplainVClusterNamesTheHelmRelease(t *testing.T) {
	in := VClusterInput{ResourceUUID: resourceUUID, Resource: ResourceRef{UUID: resourceUUID, Slug: "lab"}}
	for def, want := range map[string]string{VClusterCreate: "Helm release lab in vc-lab", VClusterTerminate: "uninstalls the Helm release lab from vc-lab"} {
		p, err := ExplainVCluster(&VClusterOffering{Settings: vcluster.Settings{Driver: vcluster.DriverHelm}}, def, in)
		if err != nil || !strings.Contains(p.Steps[stepVCRelease], want) {
			t.Errorf("%s: release step %q (%v), want %q", def, p.Steps[stepVCRelease], err, want)
		}
	}
	p, err := ExplainVCluster(&VClusterOffering{Settings: vcluster.Settings{Driver: vcluster.DriverExternal}}, VClusterCreate, in)
	if err != nil || p.Steps[stepVCRelease] != driverNothingMsg {
		t.Errorf("external: release step %q (%v)", p.Steps[stepVCRelease], err)
	}
}

func TestExplainVClusterNamesThePlatformInstance(t *testing.T) {
	in := VClusterInput{ResourceUUID: resourceUUID, Resource: ResourceRef{UUID: resourceUUID, Slug: "lab"}}
	s := vcluster.Settings{Driver: vcluster.DriverPlatform, PlatformProject: "waldur", PlatformTemplate: "small", PlatformCluster: "loft-cluster"}
	for def, want := range map[string]string{
		VClusterCreate:    "VirtualClusterInstance lab in p-waldur from template small, on platform cluster loft-cluster in vc-lab",
		VClusterTerminate: "deletes VirtualClusterInstance lab from p-waldur",
	} {
		p, err := ExplainVCluster(&VClusterOffering{Settings: s}, def, in)
		if err != nil || !strings.Contains(p.Steps[stepVCRelease], want) {
			t.Errorf("%s: release step %q (%v), want %q", def, p.Steps[stepVCRelease], err, want)
		}
	}
}
