package app

import (
	"context"
	"maps"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
)

// projectGroups names a Rancher project's Keycloak groups when its
// offering has Keycloak enabled (nil otherwise: orders take the direct
// path, as ManagedNamespace's do): the cluster's group, then the Waldur
// project's child group under it, which is the one bound to the project.
func projectGroups(b backend.Backend) func(projectSlug string) []contract.GroupSpec {
	rb, ok := b.(*rancher.Backend)
	if !ok {
		return nil
	}
	st := rb.Settings()
	if !st.KeycloakEnabled {
		return nil
	}
	parent := contract.GroupSpec{Name: rancher.ParentGroupName(st.ClusterID), Description: rancher.ParentGroupDescription(st.ClusterID)}
	return func(projectSlug string) []contract.GroupSpec {
		return []contract.GroupSpec{
			parent,
			{Name: rancher.ChildGroupName(projectSlug, st.DefaultRole), Description: rancher.ChildGroupDescription(projectSlug, st.DefaultRole), Parent: parent.Name},
		}
	}
}

// usersByID is keycloak_use_user_id of a Rancher backend (false for others).
func usersByID(b backend.Backend) (byID, ok bool) {
	rb, ok := b.(*rancher.Backend)
	if !ok {
		return false, false
	}
	return rb.Settings().KeycloakUseUserID, true
}

// rancherGroupNames are, for keycloak-sync's leftover cleanup, the groups a
// live resource of a Rancher offering uses (its cluster's group and its
// Waldur project's child group) and the backend's group bindings, so that
// a child group still bound to a project stays; nil for other backends.
func rancherGroupNames(b backend.Backend) (func(waldur.Resource) []keycloaksync.GroupName, func(context.Context, string) ([]string, error)) {
	groups := projectGroups(b)
	if groups == nil {
		return nil, nil
	}
	names := func(r waldur.Resource) []keycloaksync.GroupName {
		var out []keycloaksync.GroupName
		for _, g := range groups(r.ProjectSlug) {
			out = append(out, keycloaksync.GroupName{Name: g.Name, Parent: g.Parent})
		}
		return out
	}
	return names, b.(*rancher.Backend).GroupBindings
}

// clusterGroupNames are a rancher-cluster resource's groups: its cluster
// group c_<uuid hex> and every role group under it.
func clusterGroupNames(r waldur.Resource) []keycloaksync.GroupName {
	return []keycloaksync.GroupName{{Name: ranchercluster.KeycloakParentGroup(events.HexUUID(r.UUID)), Subtree: true}}
}

// ClusterMembershipOffering is how the membership service sees a
// rancher-cluster offering (ok false without keycloak_enabled: its
// clusters have no groups): each resource's team goes into its cluster's
// role groups c_<uuid hex>_<role>, which the create saga made under
// c_<uuid hex> and bound to the cluster's role templates, by the
// offering's role_mapping. It has no backend: the groups and bindings are
// the cluster-provisioner's, membership only fills them.
func ClusterMembershipOffering(op *OfferingPlan, w membership.Waldur) (membership.Offering, bool) {
	s := &op.RancherCluster
	if !s.KeycloakEnabled {
		return membership.Offering{}, false
	}
	roles := slices.Clone(s.ClusterRoles)
	return membership.Offering{Config: op.Config, Waldur: w, Roles: roles, RoleMapping: maps.Clone(s.RoleMapping),
		Groups: func(r *waldur.Resource) []contract.GroupSpec {
			h := events.HexUUID(r.UUID)
			parent := ranchercluster.KeycloakParentGroup(h)
			out := make([]contract.GroupSpec, 0, len(roles))
			for _, role := range roles {
				out = append(out, contract.GroupSpec{Role: role, Name: ranchercluster.KeycloakRoleGroup(h, role), Parent: parent})
			}
			return out
		}}, true
}
