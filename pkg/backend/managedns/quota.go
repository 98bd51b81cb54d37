package managedns

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Quotas of the status operations, exactly as the Python plugin patches
// them. They name the default quota fields whatever the mapping says, and
// leave every other field (gpu) as it is.
var (
	pausedQuota     = map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi"}
	downscaledQuota = map[string]string{"cpu": "1", "memory": "1Gi", "storage": "1Gi"}
)

// gibTypes are the component types whose quantities are in GiB.
var gibTypes = map[string]bool{"ram": true, "storage": true}

// quotaCodec converts between Waldur limits and spec.quota.
type quotaCodec struct {
	mapping    map[string]string
	components map[string]config.BackendComponent
}

// componentType is the component's configured "type", or its key.
func (c quotaCodec) componentType(key string) string {
	if t, ok := c.components[key].Extra["type"].(string); ok && t != "" {
		return t
	}
	return key
}

// toQuota converts Waldur limits to quota quantities. Components without
// a quota field are dropped; no unit_factor is applied (as in Python).
func (c quotaCodec) toQuota(limits map[string]float64) (map[string]string, error) {
	// Negative numbers are written as Python writes them.
	if err := backend.CheckLimits(limits, pyNumber); err != nil {
		return nil, err
	}
	keys := sortedKeys(limits)
	quota := map[string]string{}
	for _, k := range keys {
		t := c.componentType(k)
		field := c.mapping[t]
		if field == "" {
			continue
		}
		s := pyNumber(limits[k])
		if gibTypes[t] {
			s += "Gi"
		}
		// Python's str() writes very small and very large numbers with an
		// exponent (1e-05), which a quantity cannot combine with a unit:
		// the CR would hold a quota the operator cannot apply.
		if _, err := resource.ParseQuantity(s); err != nil {
			return nil, fault.Errorf(fault.Invalid, "Resource limit %s (%s) cannot be written as a Kubernetes quantity", k, pyNumber(limits[k]))
		}
		quota[field] = s
	}
	return quota, nil
}

// fromQuota converts quota quantities back to Waldur limits, keyed by the
// component that maps to each field (or by the type, for a mapped type no
// configured component has). Fields nothing maps to are left out.
func (c quotaCodec) fromQuota(quota map[string]string) (map[string]float64, error) {
	type target struct{ key, typ string }
	byField := map[string]target{}
	for _, t := range sortedKeys(c.mapping) {
		if f := c.mapping[t]; f != "" {
			byField[f] = target{t, t}
		}
	}
	keys := sortedKeys(c.components)
	for i := len(keys) - 1; i >= 0; i-- { // the first key wins a shared field
		t := c.componentType(keys[i])
		if f := c.mapping[t]; f != "" {
			byField[f] = target{keys[i], t}
		}
	}
	limits := map[string]float64{}
	for _, field := range sortedKeys(quota) {
		tg, ok := byField[field]
		if !ok {
			continue
		}
		v, err := parseQuantity(quota[field], gibTypes[tg.typ])
		if err != nil {
			return nil, fault.Errorf(fault.Invalid, "quota %s: %v", field, err)
		}
		limits[tg.key] = v
	}
	return limits, nil
}

// parseQuantity reads a quantity in Waldur units: GiB when gib is set,
// plain numbers otherwise. The forms toQuota writes are read exactly;
// anything else a person may have written ("512Mi", "500m") goes through
// resource.Quantity.
func parseQuantity(s string, gib bool) (float64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity", s)
	}
	num, exact := s, true
	if gib {
		num, exact = strings.CutSuffix(s, "Gi")
	}
	if exact {
		if v, err := strconv.ParseFloat(num, 64); err == nil {
			return v, nil
		}
	}
	v := q.AsApproximateFloat64()
	if gib {
		v /= 1 << 30
	}
	return v, nil
}

// pyNumber formats a limit as Python's str() does for the JSON number
// Waldur sent: integers without a decimal point, other values with their
// decimals.
func pyNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if a := math.Abs(v); a >= 1e-4 && a < 1e16 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}
