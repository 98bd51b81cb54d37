package app

import (
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/contract"
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
