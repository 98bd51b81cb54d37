package rancher

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// QuotaName is the ResourceQuota sitebus (and the Python plugin) imports
// into a project's namespace.
const QuotaName = "custom-resource-quota"

// Hard keys of the quota (reference §4.1 _build_k8s_resource_mapping).
const (
	hardCPU     = "limits.cpu"
	hardMemory  = "limits.memory"
	hardStorage = "requests.storage"
	hardGPU     = "requests.nvidia.com/gpu"
)

// byType maps the component types that get a quota to their hard key;
// other types (pods) are reported, never enforced.
var byType = map[string]string{"cpu": hardCPU, "ram": hardMemory, "storage": hardStorage, "gpu": hardGPU}

// byKey is Python's fallback for a component without a type: by its key.
var byKey = map[string]struct{ hard, typ string }{
	"cpu": {hardCPU, "cpu"}, "memory": {hardMemory, "ram"}, "storage": {hardStorage, "storage"}, "gpu": {hardGPU, "gpu"},
}

// k8sResourceRe is a Kubernetes resource name (nvidia.com/gpu-h100): it
// becomes a YAML key, emitted plain, so nothing that would need quoting.
var k8sResourceRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)

// quotaCodec converts between Waldur limits (keyed by component) and the
// quota's hard map.
//
// A component maps by its configured type (cpu, ram, storage, gpu), or
// to requests.<k8s_resource> when it names one; a component of another
// type (pods) is not enforced. A component without a type, or a limit
// for a component the offering does not configure, maps by its key (cpu,
// memory, storage, gpu), Python's fallback. Python applies that fallback
// only in set_resource_limits (its create drops untyped components); here
// both use it, so an update cannot set a quota a create would not.
type quotaCodec struct {
	forward map[string]string // component key → hard key
	types   map[string]string // component key → type, for every mapped key
	off     map[string]bool   // configured components that get no quota
	reverse map[string]string // hard key → component key
	keys    []string          // configured component keys, sorted
}

func newQuotaCodec(components map[string]config.BackendComponent) (quotaCodec, error) {
	c := quotaCodec{forward: map[string]string{}, types: map[string]string{}, off: map[string]bool{}, reverse: map[string]string{}}
	var errs []string
	for _, k := range sortedKeys(components) {
		c.keys = append(c.keys, k)
		extra := components[k].Extra
		typ, _ := extra["type"].(string)
		hard := ""
		switch {
		case typ == "":
			if f, ok := byKey[k]; ok {
				hard, typ = f.hard, f.typ
			}
		case byType[typ] != "":
			hard = byType[typ]
			if r, set := extra["k8s_resource"]; set && r != nil {
				s, ok := r.(string)
				if !ok || !k8sResourceRe.MatchString(s) {
					errs = append(errs, fmt.Sprintf("backend_components.%s.k8s_resource: %v is not a Kubernetes resource name", k, r))
					continue
				}
				hard = "requests." + s
			}
		}
		if hard == "" {
			c.off[k] = true
			continue
		}
		if other, dup := c.reverse[hard]; dup {
			errs = append(errs, fmt.Sprintf("backend_components.%s: maps to quota %s as %s does; one quota cannot hold two limits", k, hard, other))
			continue
		}
		c.forward[k], c.types[k], c.reverse[hard] = hard, typ, k
	}
	// Unconfigured keys fall back by key, and read back to that key.
	for _, k := range sortedKeys(byKey) {
		f := byKey[k]
		if _, taken := c.reverse[f.hard]; !taken && !c.off[k] {
			if _, configured := components[k]; !configured {
				c.reverse[f.hard] = k
			}
		}
	}
	if len(errs) > 0 {
		return quotaCodec{}, fmt.Errorf("rancher: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// hardKey is the quota key component k maps to, and its type.
func (c quotaCodec) hardKey(k string) (hard, typ string, ok bool) {
	if h, ok := c.forward[k]; ok {
		return h, c.types[k], true
	}
	if c.off[k] { // configured, but with no quota (every configured key is in forward or off)
		return "", "", false
	}
	f, ok := byKey[k]
	return f.hard, f.typ, ok
}

// toHard converts limits to the quota's hard map in Python's formats;
// limits without a quota are left out.
func (c quotaCodec) toHard(limits map[string]float64) (map[string]string, error) {
	if err := backend.CheckLimits(limits, nil); err != nil {
		return nil, err
	}
	hard := map[string]string{}
	for _, k := range sortedKeys(limits) {
		h, _, ok := c.hardKey(k)
		if !ok {
			continue
		}
		s, err := FormatQuotaValue(h, limits[k])
		if err != nil {
			return nil, fault.Errorf(fault.Invalid, "Resource limit %s: %v", k, err)
		}
		hard[h] = s
	}
	return hard, nil
}

// quotaLimits keeps the limits that have a quota.
func (c quotaCodec) quotaLimits(limits map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range limits {
		if _, _, ok := c.hardKey(k); ok {
			out[k] = v
		}
	}
	return out
}

// fromHard reads a hard (or used) map back to Waldur units, keyed by
// component; quota keys no component maps to are left out.
func (c quotaCodec) fromHard(hard map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, h := range sortedKeys(hard) {
		k, ok := c.reverse[h]
		if !ok {
			continue
		}
		v, err := ParseQuotaValue(h, hard[h])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// typeOf is the type of a mapped component (cpu, ram, storage, gpu).
func (c quotaCodec) typeOf(k string) string {
	_, t, _ := c.hardKey(k)
	return t
}

// FormatQuotaValue formats a limit (Waldur units) for quota key hard
// exactly as the Python plugin's _format_k8s_quota_value: CPU in
// millicores, memory in Mi of the GB value, storage in Mi of the whole
// GB, anything else a whole number. Fractions are truncated, as Python's
// int() does.
func FormatQuotaValue(hard string, v float64) (string, error) {
	switch hard {
	case hardCPU:
		n, err := pyInt(v * 1000)
		return strconv.FormatInt(n, 10) + "m", err
	case hardMemory:
		n, err := pyInt(v * 1024)
		return strconv.FormatInt(n, 10) + "Mi", err
	case hardStorage:
		n, err := pyInt(v)
		if err == nil && (n > math.MaxInt64/1024 || n < math.MinInt64/1024) {
			err = fmt.Errorf("%v is too large", v)
		}
		return strconv.FormatInt(n*1024, 10) + "Mi", err
	}
	n, err := pyInt(v)
	return strconv.FormatInt(n, 10), err
}

// pyInt truncates towards zero like Python's int(float).
func pyInt(v float64) (int64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<63 {
		return 0, fmt.Errorf("%v is not a quota value", v)
	}
	return int64(math.Trunc(v)), nil
}

// ParseQuotaValue reads a quota quantity (spec.hard, status.used) in
// Waldur units as the Python plugin does: CPU "5000m" is 5 and "5" is 5;
// memory and storage "Gi" as is, "Mi"/1024, "Ki"/1024², and a plain
// number as is (Python's reading; Kubernetes writes a plain number only
// for a byte count that is no multiple of 1Ki); other resources as
// numbers. Quantities Python cannot read (it then reports every usage as
// 0) are read by their meaning instead: "1G" of memory is 10⁹ bytes.
func ParseQuotaValue(hard, s string) (float64, error) {
	s = strings.TrimSpace(s)
	bad := func() (float64, error) { return 0, fmt.Errorf("quota %s: %q is not a quantity", hard, s) }
	num := func(n string, div float64) (float64, bool) {
		v, err := strconv.ParseFloat(n, 64)
		return v / div, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	switch {
	case hard == "cpu" || strings.HasSuffix(hard, ".cpu"):
		if n, ok := strings.CutSuffix(s, "m"); ok {
			if v, ok := num(n, 1000); ok {
				return v, nil
			}
		} else if v, ok := num(s, 1); ok {
			return v, nil
		}
	case strings.Contains(hard, "memory") || strings.Contains(hard, "storage"):
		for _, u := range []struct {
			suffix string
			div    float64
		}{{"Gi", 1}, {"Mi", 1024}, {"Ki", 1024 * 1024}, {"", 1}} {
			if n, ok := strings.CutSuffix(s, u.suffix); ok {
				if v, ok := num(n, u.div); ok {
					return v, nil
				}
				break
			}
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return bad()
		}
		return q.AsApproximateFloat64() / (1 << 30), nil
	default:
		if v, ok := num(s, 1); ok {
			return v, nil
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return bad()
	}
	return q.AsApproximateFloat64(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
