package backend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/pkg/fault"
)

// CheckLimits refuses limits no quota can hold, with the message every
// backend gives (the k8s-ut-namespace plugin's): a limit that is not a
// number, or the negative ones, each written by number, or as the
// shortest decimal when number is nil (the backends differ in how they
// print a float).
func CheckLimits(limits map[string]float64, number func(float64) string) error {
	if number == nil {
		number = func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	}
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var negative []string
	for _, k := range keys {
		v := limits[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fault.Errorf(fault.Invalid, "Resource limit %s is not a number: %v", k, v)
		}
		if v < 0 {
			negative = append(negative, fmt.Sprintf("'%s': %s", k, number(v)))
		}
	}
	if len(negative) > 0 {
		return fault.Errorf(fault.Invalid, "Negative resource limits are not allowed: {%s}", strings.Join(negative, ", "))
	}
	return nil
}
