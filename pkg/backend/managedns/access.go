package managedns

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Spec fields per access role, as the Python plugin writes them.
var (
	groupFields = map[string]string{backend.RoleAdmin: "adminGroups", backend.RoleReadWrite: "rwGroups", backend.RoleReadOnly: "roGroups"}
	userFields  = map[string]string{backend.RoleAdmin: "adminUsers", backend.RoleReadWrite: "rwUsers", backend.RoleReadOnly: "roUsers"}
)

// GroupName is the Keycloak group of a namespace role: ns_<slug>_<role>.
func GroupName(slug, role string) string { return "ns_" + slug + "_" + role }

// GroupDescription is the description the Python plugin gives that group.
func GroupDescription(slug, role string) string {
	return fmt.Sprintf("Namespace %s %s access", slug, role)
}

// AccessGroups names the three groups of a slug, by role.
func AccessGroups(slug string) map[string]string {
	out := make(map[string]string, len(backend.Roles))
	for _, r := range backend.Roles {
		out[r] = GroupName(slug, r)
	}
	return out
}

// SlugOf recovers a resource's slug from its namespace name, as the Python
// plugin does when a resource has no slug at hand.
func (b *Backend) SlugOf(backendID string) string {
	return strings.TrimPrefix(backendID, b.settings.NamespacePrefix)
}

var _ backend.UserSyncer = (*Backend)(nil)

// SetUsers writes adminUsers, rwUsers and roUsers (sorted; an empty list
// clears a role), as sync_users_to_cr does in the Python plugin.
func (b *Backend) SetUsers(ctx context.Context, backendID string, users map[string][]string) (bool, error) {
	want := map[string]any{}
	for role, field := range userFields {
		list := slices.Clone(users[role])
		slices.Sort(list)
		list = slices.Compact(list)
		items := make([]any, len(list))
		for i, u := range list {
			items[i] = u
		}
		want[field] = items
	}
	changed := false
	err := b.update(ctx, backendID, func(cr *unstructured.Unstructured) (patch, error) {
		spec, _, _ := unstructured.NestedMap(cr.Object, "spec")
		changed = false
		for field, v := range want {
			if !sameStrings(spec[field], v.([]any)) {
				changed = true
			}
		}
		if !changed {
			return nil, nil
		}
		p := newPatch(cr)
		p["spec"] = want
		return p, nil
	})
	if changed && err == nil {
		b.log.Info("set ManagedNamespace users", "name", backendID)
	}
	return changed, err
}

func sameStrings(have any, want []any) bool {
	h, _ := have.([]any)
	if len(h) != len(want) {
		return false
	}
	for i := range h {
		if h[i] != want[i] {
			return false
		}
	}
	return true
}
