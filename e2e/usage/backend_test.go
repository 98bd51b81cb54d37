package usage_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/config"
)

// The one-object Usage (namespace-scoped lists) agrees with UsageAll (the
// cluster-wide lists), a CR whose namespace does not exist yet has zero
// usage, and an absent CR is not found.
func TestManagedNamespaceUsageOfOneAgreesWithUsageAll(t *testing.T) {
	c := cluster(t)
	dyn := c.Dynamic()
	crNS := newNamespace(t, dyn, "crs")
	ns := newNamespace(t, dyn, "tenant")
	createCR(t, dyn, crNS, "waldur-one", ns)
	createCR(t, dyn, crNS, "waldur-unborn", uniqueName(t, "never-created"))
	createPod(t, dyn, ns, "p", container{"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "2"})
	createPVC(t, dyn, ns, "v", "20Gi")

	s, err := managedns.ParseSettings(map[string]any{"cr_namespace": crNS})
	if err != nil {
		t.Fatal(err)
	}
	b, err := managedns.New(s, map[string]config.BackendComponent{"cpu": {}, "ram": {}, "storage": {}, "gpu": {}}, managedns.Options{RESTConfig: c.RESTConfig()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]float64{"cpu": 1.5, "ram": 3, "storage": 20, "gpu": 2}
	one, err := b.Usage(ctx, "waldur-one")
	if err != nil || !maps.Equal(one, want) {
		t.Errorf("Usage = %v, %v; want %v", one, err, want)
	}
	all, err := b.UsageAll(ctx, []string{"waldur-one", "waldur-unborn", "waldur-absent"})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(all["waldur-one"], want) {
		t.Errorf("UsageAll[waldur-one] = %v, want %v", all["waldur-one"], want)
	}
	if zero := map[string]float64{"cpu": 0, "ram": 0, "storage": 0, "gpu": 0}; !maps.Equal(all["waldur-unborn"], zero) {
		t.Errorf("UsageAll[waldur-unborn] = %v, want zeros", all["waldur-unborn"])
	}
	if _, ok := all["waldur-absent"]; ok {
		t.Errorf("UsageAll reports a CR that does not exist: %v", all)
	}
	if _, err := b.Usage(ctx, "waldur-absent"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Usage of an absent CR: %v, want ErrNotFound", err)
	}
}
