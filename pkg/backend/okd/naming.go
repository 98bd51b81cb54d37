package okd

import (
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// maxNameLen is the longest RFC 1123 label, hence the longest project
// (namespace) name.
const maxNameLen = kubeapi.MaxNameLen

// Names computes the names of the seed's table for a resource:
// namespace_prefix + allocation_prefix + the resource's slug for its
// project, and the customer's (org-) and Waldur project's (proj-) names
// that go into its waldur/organization and waldur/parent annotations.
type Names struct {
	Project, Organization, Parent string
}

// ProjectName is the project a resource gets: namespace_prefix +
// allocation_prefix + slug. The slug is used as it is: lower-casing or
// rewriting it could map two resources, of different tenants, to one
// project, so a name that is no RFC 1123 label is refused
// (backend.ErrInvalid), never turned into another one.
func (s Settings) ProjectName(r backend.Resource) (string, error) {
	if r.Slug == "" {
		return "", fault.Errorf(fault.Invalid, "Resource %s has no slug, cannot name its OpenShift project", r.UUID)
	}
	name := s.NamespacePrefix + s.AllocationPrefix + r.Slug
	if err := validateName(name); err != nil {
		return "", err
	}
	return name, nil
}

// Names returns the project's name and its annotations' names; a customer
// or project without slug leaves that annotation's name empty.
func (s Settings) Names(r backend.Resource) (Names, error) {
	p, err := s.ProjectName(r)
	if err != nil {
		return Names{}, err
	}
	n := Names{Project: p}
	if r.CustomerSlug != "" {
		n.Organization = s.NamespacePrefix + s.CustomerPrefix + r.CustomerSlug
	}
	if r.ProjectSlug != "" {
		n.Parent = s.NamespacePrefix + s.ProjectPrefix + r.ProjectSlug
	}
	return n, nil
}

// validateName checks that name can be a project (namespace) name; the
// message reaches Waldur as the order's error.
func validateName(name string) error {
	return kubeapi.ValidateName("OpenShift project name", name)
}
