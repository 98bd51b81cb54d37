package simkit

import (
	"cmp"
	"maps"
	"slices"
)

// SortedBy returns m's values ordered by key (e.g. a creation sequence):
// map order is random, lists must be stable.
func SortedBy[K comparable, V any, O cmp.Ordered](m map[K]V, key func(V) O) []V {
	out := slices.AppendSeq(make([]V, 0, len(m)), maps.Values(m))
	slices.SortFunc(out, func(a, b V) int { return cmp.Compare(key(a), key(b)) })
	return out
}

// Select is the values of m that keep accepts, in the order of key, each
// as view renders (or copies) it; nil when none is.
func Select[K comparable, V any, O cmp.Ordered, R any](m map[K]V, key func(V) O, keep func(V) bool, view func(V) R) []R {
	// Filter before sorting: a lookup by name among thousands of objects
	// (a drift pass over 1,000 resources) would otherwise sort them all on
	// every call.
	var kept []V
	for _, v := range m {
		if keep(v) {
			kept = append(kept, v)
		}
	}
	slices.SortFunc(kept, func(a, b V) int { return cmp.Compare(key(a), key(b)) })
	var out []R
	for _, v := range kept {
		out = append(out, view(v))
	}
	return out
}

// FindBy is a value of m that match accepts (which one, when several do,
// is not defined: ask for what is unique); nil when none is.
func FindBy[K comparable, V any](m map[K]*V, match func(*V) bool) *V {
	for _, v := range m {
		if match(v) {
			return v
		}
	}
	return nil
}

// Index is a map of pointers to the items by key, e.g. a fixture's
// objects by id.
func Index[K comparable, T any](items []T, key func(T) K) map[K]*T {
	out := make(map[K]*T, len(items))
	for i := range items {
		out[key(items[i])] = &items[i]
	}
	return out
}

// Map is f of each of items, in order; empty, never nil, when items is,
// since a JSON list must be [] rather than null.
func Map[T, R any](items []T, f func(T) R) []R {
	out := make([]R, 0, len(items))
	for _, v := range items {
		out = append(out, f(v))
	}
	return out
}

// CloneOrEmpty is a copy of m, empty rather than nil: it renders as {},
// and a caller may add to it without changing m.
func CloneOrEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return maps.Clone(m)
}

// OrNil is s, or nil for "": an unset field renders as null.
func OrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
