package managedns

import (
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// maxNameLen is the longest RFC 1123 label, hence the longest namespace.
const maxNameLen = kubeapi.MaxNameLen

// namespaceName computes a resource's namespace (and CR) name. The slug is
// used as it is: lower-casing or rewriting it could map two resources, of
// different tenants, to one namespace, so an invalid slug is refused.
func namespaceName(prefix string, r backend.Resource) (string, error) {
	if r.Slug == "" {
		return "", fault.Errorf(fault.Invalid, "Resource %s has no slug, cannot create ManagedNamespace", r.UUID)
	}
	name := prefix + r.Slug
	if err := validateName(name); err != nil {
		return "", err
	}
	return name, nil
}

// validateName checks that name can be a namespace, with the Python
// plugin's messages (they reach Waldur as the order's error).
func validateName(name string) error {
	return kubeapi.ValidateName("Namespace name", name)
}
