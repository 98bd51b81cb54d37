package rancher

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// The expected bytes below are PyYAML 6.0.3's yaml.dump of the same
// manifest (the Python plugin's set_namespace_custom_resource_quotas).
func TestQuotaYAMLIsPyYAMLByteForByte(t *testing.T) {
	tests := map[string]struct {
		namespace string
		hard      map[string]string
		want      string
	}{
		"the reference manifest: sorted keys, the GPU count single-quoted": {
			namespace: "waldur-proj1",
			hard: map[string]string{"limits.cpu": "4000m", "limits.memory": "8192Mi",
				"requests.storage": "102400Mi", "requests.nvidia.com/gpu": "2"},
			want: "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: custom-resource-quota\n  namespace: waldur-proj1\n" +
				"spec:\n  hard:\n    limits.cpu: 4000m\n    limits.memory: 8192Mi\n    requests.nvidia.com/gpu: '2'\n" +
				"    requests.storage: 102400Mi\n",
		},
		"zero quotas, k8s_resource keys and a numeric namespace": {
			namespace: "123",
			hard: map[string]string{"limits.cpu": "0m", "limits.memory": "0Mi", "requests.storage": "0Mi",
				"requests.nvidia.com/gpu-h100": "0", "requests.nvidia.com/gpu": "10", "requests.a": "1"},
			want: "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: custom-resource-quota\n  namespace: '123'\n" +
				"spec:\n  hard:\n    limits.cpu: 0m\n    limits.memory: 0Mi\n    requests.a: '1'\n    requests.nvidia.com/gpu: '10'\n" +
				"    requests.nvidia.com/gpu-h100: '0'\n    requests.storage: 0Mi\n",
		},
		"an empty hard map is a flow mapping": {
			namespace: "waldur-x",
			hard:      map[string]string{},
			want:      "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: custom-resource-quota\n  namespace: waldur-x\nspec:\n  hard: {}\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := QuotaYAML(tc.namespace, tc.hard)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Each expectation is what yaml.dump({s: s}) writes for the scalar.
func TestYAMLScalarQuotesWhatPyYAMLQuotes(t *testing.T) {
	plain := []string{"4000m", "8192Mi", "0m", "0Mi", "1e5", "09", "waldur-x", "-a", "a...", "limits.cpu",
		"requests.nvidia.com/gpu", "y", "n", "NaN", "1e5"}
	quoted := []string{"2", "0", "1.5", ".5", "010", "0x1F", "yes", "on", "No", "null", "2024-01-01", "123", "-",
		"---a", "...a", "1_000", "-1", "0b101", ".nan", ".inf", "-.inf", "1.", "1.0e-5", "True", "OFF"}
	for _, s := range plain {
		if got, err := yamlScalar(s); err != nil || got != s {
			t.Errorf("yamlScalar(%q) = %q, %v; want it plain", s, got, err)
		}
	}
	for _, s := range quoted {
		if got, err := yamlScalar(s); err != nil || got != "'"+s+"'" {
			t.Errorf("yamlScalar(%q) = %q, %v; want it single-quoted", s, got, err)
		}
	}
	for _, s := range []string{"a b", "a:b", "it's", "ä", "a\nb", "#x"} {
		if got, err := yamlScalar(s); err == nil {
			t.Errorf("yamlScalar(%q) = %q; want it refused", s, got)
		}
	}
}

// Expected strings are Python's f"{int(v*1000)}m", f"{int(v*1024)}Mi",
// f"{int(v)*1024}Mi" and str(int(v)) of the same float.
func TestFormatQuotaValueAsPython(t *testing.T) {
	tests := []struct {
		v                        float64
		cpu, memory, storage, gp string
	}{
		{0, "0m", "0Mi", "0Mi", "0"},
		{1, "1000m", "1024Mi", "1024Mi", "1"},
		{4, "4000m", "4096Mi", "4096Mi", "4"},
		{0.5, "500m", "512Mi", "0Mi", "0"},
		{0.3, "300m", "307Mi", "0Mi", "0"},
		{1.1, "1100m", "1126Mi", "1024Mi", "1"},
		{0.29, "290m", "296Mi", "0Mi", "0"},
		{2.675, "2675m", "2739Mi", "2048Mi", "2"},
		{100, "100000m", "102400Mi", "102400Mi", "100"},
		{1023.999, "1023999m", "1048574Mi", "1047552Mi", "1023"},
		{0.001, "1m", "1Mi", "0Mi", "0"},
		{0.0009, "0m", "0Mi", "0Mi", "0"},
	}
	for _, tt := range tests {
		for _, c := range []struct{ key, want string }{
			{"limits.cpu", tt.cpu}, {"limits.memory", tt.memory}, {"requests.storage", tt.storage},
			{"requests.nvidia.com/gpu", tt.gp}, {"requests.nvidia.com/gpu-h100", tt.gp},
		} {
			got, err := FormatQuotaValue(c.key, tt.v)
			if err != nil || got != c.want {
				t.Errorf("FormatQuotaValue(%s, %v) = %q, %v; want %q", c.key, tt.v, got, err, c.want)
			}
		}
	}
	if _, err := FormatQuotaValue("limits.cpu", 1e300); err == nil {
		t.Error("a value beyond int64 was formatted")
	}
}

func TestParseQuotaValue(t *testing.T) {
	tests := []struct {
		key, s string
		want   float64
	}{
		{"limits.cpu", "5000m", 5},
		{"limits.cpu", "5", 5},
		{"limits.cpu", "500m", 0.5},
		{"limits.cpu", "0", 0},
		{"requests.cpu", "250m", 0.25},
		{"limits.memory", "8Gi", 8},
		{"limits.memory", "512Mi", 0.5},
		{"limits.memory", "1048576Ki", 1},
		{"limits.memory", "3", 3}, // Python's reading of a plain number
		{"limits.memory", "1G", 1e9 / (1 << 30)},
		{"limits.memory", "1Ti", 1024},
		{"requests.storage", "100Gi", 100},
		{"requests.storage", "102400Mi", 100},
		{"requests.nvidia.com/gpu", "2", 2},
		{"requests.nvidia.com/gpu", "1k", 1000},
		{"pods", "10", 10},
	}
	for _, tt := range tests {
		got, err := ParseQuotaValue(tt.key, tt.s)
		if err != nil || got != tt.want {
			t.Errorf("ParseQuotaValue(%s, %q) = %v, %v; want %v", tt.key, tt.s, got, err, tt.want)
		}
	}
	for _, s := range []string{"", "lots", "5x", "NaN"} {
		if v, err := ParseQuotaValue("limits.memory", s); err == nil {
			t.Errorf("ParseQuotaValue(memory, %q) = %v; want an error", s, v)
		}
	}
}

func components(m map[string]map[string]any) map[string]config.BackendComponent {
	out := map[string]config.BackendComponent{}
	for k, extra := range m {
		out[k] = config.BackendComponent{Extra: extra}
	}
	return out
}

func TestQuotaMapping(t *testing.T) {
	tests := map[string]struct {
		components map[string]map[string]any
		limits     map[string]float64
		want       map[string]string
	}{
		"components map by type": {
			components: map[string]map[string]any{"cpu": {"type": "cpu"}, "memory": {"type": "ram"},
				"storage": {"type": "storage"}, "gpu": {"type": "gpu"}},
			limits: map[string]float64{"cpu": 4, "memory": 8, "storage": 100, "gpu": 2},
			want: map[string]string{"limits.cpu": "4000m", "limits.memory": "8192Mi", "requests.storage": "102400Mi",
				"requests.nvidia.com/gpu": "2"},
		},
		"the key does not matter when the type is set": {
			components: map[string]map[string]any{"ram": {"type": "ram"}, "disk": {"type": "storage"}},
			limits:     map[string]float64{"ram": 4, "disk": 10},
			want:       map[string]string{"limits.memory": "4096Mi", "requests.storage": "10240Mi"},
		},
		"k8s_resource gives requests.X": {
			components: map[string]map[string]any{"gpu_h100": {"type": "gpu", "k8s_resource": "nvidia.com/gpu-h100"},
				"gpu_h200": {"type": "gpu", "k8s_resource": "nvidia.com/gpu-h200"}},
			limits: map[string]float64{"gpu_h100": 2, "gpu_h200": 4},
			want:   map[string]string{"requests.nvidia.com/gpu-h100": "2", "requests.nvidia.com/gpu-h200": "4"},
		},
		"a component of another type gets no quota": {
			components: map[string]map[string]any{"cpu": {"type": "cpu"}, "pods": {"type": "pods"},
				"memory": {"type": "pods", "k8s_resource": "pods"}},
			limits: map[string]float64{"cpu": 1, "pods": 50, "memory": 3},
			want:   map[string]string{"limits.cpu": "1000m"},
		},
		"without a type, or unconfigured, a component maps by its key": {
			components: map[string]map[string]any{"memory": {}},
			limits:     map[string]float64{"cpu": 1, "memory": 2, "storage": 3, "gpu": 1, "ram": 5, "pods": 9},
			want: map[string]string{"limits.cpu": "1000m", "limits.memory": "2048Mi", "requests.storage": "3072Mi",
				"requests.nvidia.com/gpu": "1"},
		},
		"no limit that maps gives an empty quota": {
			components: map[string]map[string]any{"pods": {"type": "pods"}},
			limits:     map[string]float64{"pods": 9},
			want:       map[string]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := newQuotaCodec(components(tc.components))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.toHard(tc.limits)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("toHard = %v, want %v", got, tc.want)
			}
			// Read back, every mapped limit comes back under its key
			// (whole values here, so nothing is truncated).
			back, err := c.fromHard(got)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.quotaLimits(tc.limits); !maps.Equal(back, want) {
				t.Errorf("fromHard = %v, want %v", back, want)
			}
		})
	}
}

func TestQuotaMappingRefuses(t *testing.T) {
	tests := map[string]struct {
		components map[string]map[string]any
		want       string
	}{
		"two components on one quota key": {
			components: map[string]map[string]any{"cpu": {"type": "cpu"}, "vcpu": {"type": "cpu"}},
			want:       "backend_components.vcpu: maps to quota limits.cpu as cpu does",
		},
		"a k8s_resource that is no resource name": {
			components: map[string]map[string]any{"gpu": {"type": "gpu", "k8s_resource": "nvidia.com/gpu: 2"}},
			want:       "backend_components.gpu.k8s_resource: nvidia.com/gpu: 2 is not a Kubernetes resource name",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := newQuotaCodec(components(tc.components))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLimitsNoQuotaCanHoldAreInvalid(t *testing.T) {
	c, err := newQuotaCodec(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, limits := range map[string]map[string]float64{
		"negative":       {"cpu": -1, "memory": 2},
		"negative pods":  {"pods": -3},
		"not a number":   {"cpu": nan()},
		"beyond a quota": {"storage": 1e300},
	} {
		_, err := c.toHard(limits)
		if !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) {
			t.Errorf("%s: err = %v, want terminal ErrInvalid", name, err)
		}
	}
}

func nan() float64 { var z float64; return z / z }
