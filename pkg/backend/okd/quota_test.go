package okd

import (
	"errors"
	"maps"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/config"
)

func TestQuotaHard(t *testing.T) {
	pythonKeys := map[string]config.BackendComponent{"cpu": {}, "memory": {}, "storage": {}, "pods": {}}
	typed := map[string]config.BackendComponent{
		"vcpu": {Extra: map[string]any{"type": "cpu"}}, "ram": {Extra: map[string]any{"type": "ram"}},
		"disk": {Extra: map[string]any{"type": "storage"}}, "gpu": {Extra: map[string]any{"type": "gpu"}},
	}
	tests := map[string]struct {
		components map[string]config.BackendComponent
		limits     map[string]float64
		want       map[string]string
	}{
		"seed example": {pythonKeys, map[string]float64{"cpu": 4, "memory": 16, "storage": 100, "pods": 50}, map[string]string{
			"requests.cpu": "4", "limits.cpu": "8", "requests.memory": "16Gi", "limits.memory": "32Gi",
			"requests.storage": "100Gi", "pods": "50"}},
		"fractions": {pythonKeys, map[string]float64{"cpu": 0.5, "memory": 1.5}, map[string]string{
			"requests.cpu": "0.5", "limits.cpu": "1", "requests.memory": "1.5Gi", "limits.memory": "3Gi"}},
		"by type, gpu has no quota": {typed, map[string]float64{"vcpu": 2, "ram": 4, "disk": 10, "gpu": 1}, map[string]string{
			"requests.cpu": "2", "limits.cpu": "4", "requests.memory": "4Gi", "limits.memory": "8Gi", "requests.storage": "10Gi"}},
		"no components: Waldur's ram key too": {nil, map[string]float64{"ram": 2, "pods": 3}, map[string]string{
			"requests.memory": "2Gi", "limits.memory": "4Gi", "pods": "3"}},
		"zero": {pythonKeys, map[string]float64{"cpu": 0}, map[string]string{"requests.cpu": "0", "limits.cpu": "0"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := newQuotaCodec(tc.components)
			if err != nil {
				t.Fatal(err)
			}
			hard, err := c.toHard(tc.limits)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(hard, tc.want) {
				t.Errorf("hard = %v\nwant   %v", hard, tc.want)
			}
			back, err := c.fromHard(hard)
			if err != nil {
				t.Fatal(err)
			}
			if tc.components == nil {
				// Without components, memory reads back to the Python key.
				if back["memory"] != tc.limits["ram"] {
					t.Errorf("read back %v", back)
				}
				return
			}
			for k, v := range tc.limits {
				if _, has := c.kind(k); has && back[k] != v {
					t.Errorf("read back %s = %v, want %v (all %v)", k, back[k], v, back)
				}
			}
		})
	}
}

func TestQuotaRefusesBadLimits(t *testing.T) {
	c, _ := newQuotaCodec(nil)
	for _, l := range []map[string]float64{{"cpu": -1}, {"memory": -0.5, "cpu": 1}} {
		if _, err := c.toHard(l); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("toHard(%v): err = %v, want ErrInvalid", l, err)
		}
	}
	if _, err := newQuotaCodec(map[string]config.BackendComponent{"ram": {}, "memory": {}}); err == nil {
		t.Error("two components limiting memory were accepted")
	}
}

// The API server rewrites quantities; they are read by their meaning.
func TestParseQuantityCanonicalForms(t *testing.T) {
	for _, tc := range []struct {
		kind, s string
		want    float64
	}{
		{"cpu", "500m", 0.5}, {"cpu", "300m", 0.3}, {"cpu", "2", 2},
		{"memory", "1536Mi", 1.5}, {"memory", "4Gi", 4}, {"memory", "0", 0}, {"storage", "1Ti", 1024},
		{"pods", "50", 50},
	} {
		got, err := ParseQuantity(tc.kind, tc.s)
		if err != nil || got != tc.want {
			t.Errorf("ParseQuantity(%s, %q) = %v, %v; want %v", tc.kind, tc.s, got, err, tc.want)
		}
	}
	if _, err := ParseQuantity("cpu", "lots"); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("a non-quantity: err = %v", err)
	}
}

func TestSameHardComparesQuantities(t *testing.T) {
	if !kubeapi.SameHard(map[string]string{"requests.memory": "1.5Gi", "requests.cpu": "0.5"},
		map[string]string{"requests.memory": "1536Mi", "requests.cpu": "500m"}) {
		t.Error("equal quantities in other forms differ")
	}
	if kubeapi.SameHard(map[string]string{"pods": "1"}, map[string]string{"pods": "2"}) ||
		kubeapi.SameHard(map[string]string{"pods": "1"}, map[string]string{"pods": "1", "requests.cpu": "1"}) {
		t.Error("different hard maps are the same")
	}
}

func TestUsageNormalisedToComponents(t *testing.T) {
	c, _ := newQuotaCodec(map[string]config.BackendComponent{"cpu": {}, "ram": {Extra: map[string]any{"type": "ram"}}, "gpu": {}})
	got, err := c.usage(map[string]string{"requests.cpu": "250m", "requests.memory": "512Mi", "limits.cpu": "9", "pods": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"cpu": 0.25, "ram": 0.5, "gpu": 0}; !maps.Equal(got, want) {
		t.Errorf("usage %v, want %v", got, want)
	}
}
