package managedns

import (
	"strings"

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

// reservedNamespace refuses the namespaces an order must never get, since
// the operator would grant the order's project access to them: the CR
// namespace (with the default settings a resource slugged "system" would
// otherwise be given waldur-system, where every ManagedNamespace CR, and
// often sitebus's own configuration Secret, lives), "default", and the
// kube- prefix Kubernetes reserves for its system namespaces.
func reservedNamespace(name, crNamespace string) error {
	if name == crNamespace || name == "default" || strings.HasPrefix(name, "kube-") {
		return fault.Errorf(fault.Invalid, "Namespace name '%s' is reserved (the CR namespace, default or kube-*); rename the resource", name)
	}
	return nil
}
