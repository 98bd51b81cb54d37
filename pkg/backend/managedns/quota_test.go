package managedns

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

func typed(t string) config.BackendComponent {
	return config.BackendComponent{Extra: map[string]any{"type": t}}
}

func TestToQuota(t *testing.T) {
	tests := []struct {
		name       string
		mapping    map[string]string
		components map[string]config.BackendComponent
		limits     map[string]float64
		want       map[string]string
		wantErr    string
	}{
		{
			name:   "the Python plugin's example",
			limits: map[string]float64{"cpu": 4, "ram": 8, "storage": 100, "gpu": 1},
			want:   map[string]string{"cpu": "4", "memory": "8Gi", "storage": "100Gi", "gpu": "1"},
		},
		{
			name:   "integers have no decimal point",
			limits: map[string]float64{"cpu": 2, "ram": 1024},
			want:   map[string]string{"cpu": "2", "memory": "1024Gi"},
		},
		{
			name:   "fractions keep their decimals",
			limits: map[string]float64{"cpu": 0.5, "ram": 2.25},
			want:   map[string]string{"cpu": "0.5", "memory": "2.25Gi"},
		},
		{
			name:   "zero is a quota",
			limits: map[string]float64{"cpu": 0, "storage": 0},
			want:   map[string]string{"cpu": "0", "storage": "0Gi"},
		},
		{
			name:   "unmapped components are dropped",
			limits: map[string]float64{"cpu": 1, "licenses": 3},
			want:   map[string]string{"cpu": "1"},
		},
		{
			name:    "component_quota_mapping renames a field",
			mapping: map[string]string{"gpu": "requests.nvidia.com/gpu"},
			limits:  map[string]float64{"gpu": 2},
			want:    map[string]string{"requests.nvidia.com/gpu": "2"},
		},
		{
			name:    "a null mapping unmaps a default type",
			mapping: map[string]string{"gpu": ""},
			limits:  map[string]float64{"cpu": 1, "gpu": 2},
			want:    map[string]string{"cpu": "1"},
		},
		{
			name:       "the component type picks the field and the unit",
			components: map[string]config.BackendComponent{"mem": typed("ram"), "disk": typed("storage")},
			limits:     map[string]float64{"mem": 16, "disk": 50},
			want:       map[string]string{"memory": "16Gi", "storage": "50Gi"},
		},
		{
			name:       "a component without a type is its key",
			components: map[string]config.BackendComponent{"ram": {}},
			limits:     map[string]float64{"ram": 3},
			want:       map[string]string{"memory": "3Gi"},
		},
		{
			name:   "no limits give an empty quota",
			limits: nil,
			want:   map[string]string{},
		},
		{
			name:    "negative limits are refused, formatted like a Python dict",
			limits:  map[string]float64{"cpu": -1, "ram": 4, "storage": -2.5},
			wantErr: "Negative resource limits are not allowed: {'cpu': -1, 'storage': -2.5}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mapping := DefaultQuotaMapping()
			maps.Copy(mapping, tt.mapping)
			c := quotaCodec{mapping: mapping, components: tt.components}
			got, err := c.toQuota(tt.limits)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, backend.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestFromQuota(t *testing.T) {
	tests := []struct {
		name       string
		mapping    map[string]string
		components map[string]config.BackendComponent
		quota      map[string]string
		want       map[string]float64
		wantErr    bool
	}{
		{
			name:  "the default fields map back to Waldur keys",
			quota: map[string]string{"cpu": "4", "memory": "8Gi", "storage": "100Gi", "gpu": "1"},
			want:  map[string]float64{"cpu": 4, "ram": 8, "storage": 100, "gpu": 1},
		},
		{
			name:  "fractions read back exactly",
			quota: map[string]string{"cpu": "0.5", "memory": "2.25Gi"},
			want:  map[string]float64{"cpu": 0.5, "ram": 2.25},
		},
		{
			name:  "quantities a person wrote are converted",
			quota: map[string]string{"cpu": "500m", "memory": "512Mi", "storage": "1Ti"},
			want:  map[string]float64{"cpu": 0.5, "ram": 0.5, "storage": 1024},
		},
		{
			name:       "configured component keys come back",
			mapping:    map[string]string{"gpu": "requests.nvidia.com/gpu"},
			components: map[string]config.BackendComponent{"mem": typed("ram"), "accel": typed("gpu")},
			quota:      map[string]string{"memory": "16Gi", "requests.nvidia.com/gpu": "2"},
			want:       map[string]float64{"mem": 16, "accel": 2},
		},
		{
			name:  "fields nothing maps to are left out",
			quota: map[string]string{"cpu": "1", "pods": "10"},
			want:  map[string]float64{"cpu": 1},
		},
		{
			name:    "a value that is not a quantity is invalid",
			quota:   map[string]string{"cpu": "lots"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mapping := DefaultQuotaMapping()
			maps.Copy(mapping, tt.mapping)
			c := quotaCodec{mapping: mapping, components: tt.components}
			got, err := c.fromQuota(tt.quota)
			if tt.wantErr {
				if !errors.Is(err, backend.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestQuotaRoundTrip(t *testing.T) {
	c := quotaCodec{mapping: DefaultQuotaMapping()}
	limits := map[string]float64{"cpu": 2, "ram": 4, "storage": 10, "gpu": 0.5}
	q, err := c.toQuota(limits)
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.fromQuota(q)
	if err != nil || !maps.Equal(back, limits) {
		t.Fatalf("round trip: %v -> %v -> %v, %v", limits, q, back, err)
	}
}

func TestPyNumber(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"an integer", 42, "42"},
		{"a negative integer", -1, "-1"},
		{"a fraction", 1.5, "1.5"},
		{"a large integer", 1e15, "1000000000000000"},
		{"a tiny fraction uses an exponent", 1e-5, "1e-05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pyNumber(tt.in); got != tt.want {
				t.Fatalf("pyNumber(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestQuotaRefusesLimitsNoQuantityCanHold(t *testing.T) {
	c := quotaCodec{mapping: DefaultQuotaMapping()}
	for name, limits := range map[string]map[string]float64{
		"a storage limit Python writes with an exponent": {"storage": 1e-05},
		"a ram limit too large to write without one":     {"ram": 1e300},
	} {
		t.Run(name, func(t *testing.T) {
			q, err := c.toQuota(limits)
			if err == nil || !errors.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "cannot be written as a Kubernetes quantity") {
				t.Fatalf("toQuota = %v, %v; want a terminal refusal", q, err)
			}
		})
	}
}
