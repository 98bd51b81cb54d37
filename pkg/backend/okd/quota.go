package okd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// QuotaName is the ResourceQuota holding a project's limits.
const QuotaName = "waldur-quota"

// Quota kinds: what a component limits.
const (
	kindCPU     = "cpu"
	kindMemory  = "memory"
	kindStorage = "storage"
	kindPods    = "pods"
)

// Hard (and used) keys of the quota.
const (
	HardRequestsCPU     = "requests.cpu"
	HardLimitsCPU       = "limits.cpu"
	HardRequestsMemory  = "requests.memory"
	HardLimitsMemory    = "limits.memory"
	HardRequestsStorage = "requests.storage"
	HardPods            = "pods"
)

// quotaKinds maps a kind to the hard key its limit is read back from.
var quotaKinds = map[string]string{
	kindCPU: HardRequestsCPU, kindMemory: HardRequestsMemory, kindStorage: HardRequestsStorage, kindPods: HardPods,
}

// kindOf maps a component type (or, without one, its key) to a kind:
// Waldur's ram type and the Python plugin's memory key are both memory.
var kindOf = map[string]string{
	"cpu": kindCPU, "ram": kindMemory, "memory": kindMemory, "storage": kindStorage, "pods": kindPods,
}

// burst is the factor of limits.cpu and limits.memory over the requests.
const burst = 2

// Quotas of the status operations (seed 002), by kind.
var (
	pausedLimits     = map[string]float64{kindCPU: 0, kindMemory: 0, kindStorage: 0, kindPods: 0}
	downscaledLimits = map[string]float64{kindCPU: 1, kindMemory: 1, kindStorage: 1, kindPods: 1}
)

// quotaCodec converts between Waldur limits, keyed by component, and the
// quota's hard map.
type quotaCodec struct {
	kinds      map[string]string // configured component key → kind
	keys       map[string]string // kind → component key limits are read back to
	configured map[string]bool   // every configured component key
	claimed    map[string]bool   // kinds a configured component limits
}

func newQuotaCodec(components map[string]config.BackendComponent) (quotaCodec, error) {
	c := quotaCodec{kinds: map[string]string{}, keys: map[string]string{}, configured: map[string]bool{}, claimed: map[string]bool{}}
	var errs []string
	for _, k := range sortedKeys(components) {
		c.configured[k] = true
		name := k
		if t, ok := components[k].Extra["type"].(string); ok && t != "" {
			name = t
		}
		kind, ok := kindOf[name]
		if !ok {
			continue // reported (usage 0), never enforced, as in Python
		}
		if other, dup := c.keys[kind]; dup {
			errs = append(errs, fmt.Sprintf("backend_components.%s: limits %s as %s does; one quota cannot hold two limits", k, kind, other))
			continue
		}
		c.kinds[k], c.keys[kind], c.claimed[kind] = kind, k, true
	}
	if len(errs) > 0 {
		return quotaCodec{}, fmt.Errorf("okd: %s", strings.Join(errs, "; "))
	}
	// Kinds no component configures read back to the Python plugin's keys.
	for kind := range quotaKinds {
		if _, ok := c.keys[kind]; !ok {
			c.keys[kind] = kind
		}
	}
	return c, nil
}

// kind is the quota kind of a limit's key; ok is false for limits without
// a quota (a configured component of another type, gpu...).
func (c quotaCodec) kind(key string) (string, bool) {
	if k, ok := c.kinds[key]; ok {
		return k, true
	}
	// A limit for no configured component maps by its key, unless a
	// configured component limits that kind already.
	kind, ok := kindOf[key]
	if !ok || c.configured[key] || c.claimed[kind] {
		return "", false
	}
	return kind, true
}

// toHard converts Waldur limits to hard entries; limits without a quota
// are left out.
func (c quotaCodec) toHard(limits map[string]float64) (map[string]string, error) {
	if err := backend.CheckLimits(limits, nil); err != nil {
		return nil, err
	}
	byKind := map[string]float64{}
	for _, k := range sortedKeys(limits) {
		if kind, ok := c.kind(k); ok {
			byKind[kind] = limits[k]
		}
	}
	return HardFor(byKind), nil
}

// HardFor is the quota hard map of limits by kind (cpu cores, memory GB,
// storage GB, pods), as the seed's table: CPU and memory requests with
// limits at twice the requests, storage requests, pods.
func HardFor(byKind map[string]float64) map[string]string {
	hard := map[string]string{}
	for kind, v := range byKind {
		switch kind {
		case kindCPU:
			hard[HardRequestsCPU], hard[HardLimitsCPU] = number2str(v), number2str(burst*v)
		case kindMemory:
			hard[HardRequestsMemory], hard[HardLimitsMemory] = number2str(v)+"Gi", number2str(burst*v)+"Gi"
		case kindStorage:
			hard[HardRequestsStorage] = number2str(v) + "Gi"
		case kindPods:
			hard[HardPods] = number2str(v)
		}
	}
	return hard
}

// number2str writes a limit as a quantity's number: integers without a
// decimal point, fractions in decimal (never an exponent, which a
// quantity does not take in that form).
func number2str(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fromHard reads a hard (or status.used) map back to Waldur limits, keyed
// by component; entries no kind reads back are left out.
func (c quotaCodec) fromHard(hard map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kind := range sortedKeys(quotaKinds) {
		s, ok := hard[quotaKinds[kind]]
		if !ok {
			continue
		}
		v, err := ParseQuantity(kind, s)
		if err != nil {
			return nil, err
		}
		out[c.keys[kind]] = v
	}
	return out, nil
}

// usage reads status.used into the configured components' keys, 0 where
// the quota has none, as the Python plugin normalises it.
func (c quotaCodec) usage(used map[string]string) (map[string]float64, error) {
	got, err := c.fromHard(used)
	if err != nil {
		return nil, err
	}
	if len(c.configured) == 0 {
		return got, nil
	}
	out := map[string]float64{}
	for k := range c.configured {
		out[k] = got[k]
	}
	return out, nil
}

// ParseQuantity reads a quota quantity in Waldur units: cores for cpu,
// GiB for memory and storage, a count for pods. The API server rewrites
// quantities into its canonical form ("1.5Gi" becomes "1536Mi", "0.5"
// becomes "500m"), so anything a quantity can be is read by its meaning.
func ParseQuantity(kind, s string) (float64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fault.Errorf(fault.Invalid, "quota %s: %q is not a quantity", kind, s)
	}
	// The decimal form is exact; AsApproximateFloat64 is not (0.3 cores
	// would come back as 0.30000000000000004).
	v, err := strconv.ParseFloat(q.AsDec().String(), 64)
	if err != nil {
		v = q.AsApproximateFloat64()
	}
	if kind == kindMemory || kind == kindStorage {
		v /= 1 << 30
	}
	return v, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
