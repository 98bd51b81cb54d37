package kubeapi

import "k8s.io/apimachinery/pkg/api/resource"

// SameHard reports whether two ResourceQuota hard maps hold the same
// quantities: the API server rewrites "4000m" as "4", so strings alone
// would see a change that is none. A value that is not a quantity only
// equals the same string.
func SameHard(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		if av == bv {
			continue
		}
		aq, errA := resource.ParseQuantity(av)
		bq, errB := resource.ParseQuantity(bv)
		if errA != nil || errB != nil || aq.Cmp(bq) != 0 {
			return false
		}
	}
	return true
}
