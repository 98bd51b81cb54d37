package config

import (
	"strings"
	"testing"
)

// A YAML anchor that refers to itself, through a merge key or a value,
// must end in an error naming the problem: following it used to recurse
// without end, so that `sitebus run` and `config check` hung at start.
func TestSelfReferencingAnchorsAreRefusedNotFollowedForever(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"a mapping merging itself":               {"sitebus: &a {<<: *a}\n", "the merge never ends"},
		"an offering merging itself":             {"offerings:\n  - &a {name: x, <<: *a}\n", "the merge never ends"},
		"two mappings merging each other":        {"offerings:\n  - &b {name: x, <<: &c {y: 1, <<: *b}}\n", "the merge never ends"},
		"backend settings holding themselves":    {"offerings:\n  - name: x\n    backend_settings: &a {x: *a}\n", "contains itself"},
		"backend components holding themselves":  {"offerings:\n  - name: x\n    backend_components: &a {cpu: *a}\n", ""},
		"a list holding itself in the offerings": {"offerings: &a [*a]\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "x.yaml", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
