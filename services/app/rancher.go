package app

import (
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/services/sagas"
)

// projectGroups names a Rancher project's Keycloak groups when its
// offering has Keycloak enabled (nil otherwise: orders take the direct
// path, as ManagedNamespace's do): the cluster's group, then the Waldur
// project's child group under it, which is the one bound to the project.
func projectGroups(b backend.Backend) func(projectSlug string) []sagas.GroupSpec {
	rb, ok := b.(*rancher.Backend)
	if !ok || !rb.Settings().KeycloakEnabled {
		return nil
	}
	st := rb.Settings()
	return func(projectSlug string) []sagas.GroupSpec {
		parent := rancher.ParentGroupName(st.ClusterID)
		return []sagas.GroupSpec{
			{Name: parent, Description: rancher.ParentGroupDescription(st.ClusterID)},
			{Name: rancher.ChildGroupName(projectSlug, st.DefaultRole), Description: rancher.ChildGroupDescription(projectSlug, st.DefaultRole), Parent: parent},
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
