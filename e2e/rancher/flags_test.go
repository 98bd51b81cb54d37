package rancher_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// hardQuota reads the namespace's custom-resource-quota from the cluster as
// canonical quantities, so "4000m" and "4" compare equal.
func (s *site) hardQuota(t *testing.T, ns string) map[string]string {
	t.Helper()
	q, err := s.Cluster.Dynamic().Resource(corev1.SchemeGroupVersion.WithResource("resourcequotas")).Namespace(ns).Get(ctx(t), "custom-resource-quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hard, _ := q.Object["spec"].(map[string]any)["hard"].(map[string]any)
	out := map[string]string{}
	for k, v := range hard {
		qty, err := resource.ParseQuantity(v.(string))
		if err != nil {
			t.Fatalf("quota %s: %s=%v: %v", ns, k, v, err)
		}
		out[k] = qty.String()
	}
	return out
}

// Waldur's paused and downscaled flags reach a Rancher project's quota
// through the quota service, and clearing them brings back the limits in
// force before (the Python plugin ignores both flags).
func TestRancherPauseDownscaleRestore(t *testing.T) {
	s := newSiteWith(t, siteOptions{})
	orderUUID, resUUID := s.Create("flags", map[string]int{"cpu": 6, "ram": 12, "storage": 50, "gpu": 2})
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	ns := s.Prefix + "flags"
	original := map[string]string{"limits.cpu": "6", "limits.memory": "12Gi", "requests.storage": "50Gi", "requests.nvidia.com/gpu": "2"}
	zero := map[string]string{"limits.cpu": "0", "limits.memory": "0", "requests.storage": "0", "requests.nvidia.com/gpu": "2"}
	minimal := map[string]string{"limits.cpu": "1", "limits.memory": "1Gi", "requests.storage": "1Gi", "requests.nvidia.com/gpu": "2"}
	if got := s.hardQuota(t, ns); !maps.Equal(got, original) {
		t.Fatalf("quota after create %v, want %v", got, original)
	}
	steps := []struct {
		name  string
		flags waldursim.FlagsRequest
		want  map[string]string
	}{
		{"pause zeroes cpu, memory and storage, not the GPUs", waldursim.FlagsRequest{Paused: ptr(true)}, zero},
		{"restore brings the limits back", waldursim.FlagsRequest{Paused: ptr(false)}, original},
		{"downscale sets the minimal quota", waldursim.FlagsRequest{Downscaled: ptr(true)}, minimal},
		{"pause while downscaled zeroes", waldursim.FlagsRequest{Paused: ptr(true)}, zero},
		{"clearing both restores the limits of before", waldursim.FlagsRequest{Paused: ptr(false), Downscaled: ptr(false)}, original},
	}
	for _, st := range steps {
		if _, err := s.Admin.SetFlags(ctx(t), resUUID, st.flags); err != nil {
			t.Fatal(err)
		}
		var seen map[string]string
		harness.Eventually(t, 60*time.Second, st.name, func() bool {
			got := s.hardQuota(t, ns)
			if !maps.Equal(got, seen) { // each quota seen once in the log of a failure
				t.Logf("%s: quota %v, want %v", st.name, got, st.want)
				seen = got
			}
			return maps.Equal(got, st.want)
		})
	}
}

func ptr[T any](v T) *T { return &v }
