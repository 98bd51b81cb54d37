package simkit

import (
	"cmp"
	"slices"
)

// CountBy counts the values of m for which match holds, e.g. the objects
// a project owns, for a quota.
func CountBy[K comparable, V any](m map[K]V, match func(V) bool) int {
	n := 0
	for _, v := range m {
		if match(v) {
			n++
		}
	}
	return n
}

// SortedBy returns m's values ordered by key (e.g. a creation sequence):
// map order is random, lists must be stable.
func SortedBy[K comparable, V any, O cmp.Ordered](m map[K]V, key func(V) O) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b V) int { return cmp.Compare(key(a), key(b)) })
	return out
}

// Select is the values of m that keep accepts, in the order of key, each
// as view renders (or copies) it; nil when none is.
func Select[K comparable, V any, O cmp.Ordered, R any](m map[K]V, key func(V) O, keep func(V) bool, view func(V) R) []R {
	var out []R
	for _, v := range SortedBy(m, key) {
		if keep(v) {
			out = append(out, view(v))
		}
	}
	return out
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
