package rancher

import (
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// ProjectName computes the name of a resource's Rancher project, which is
// also its namespace's: prefix + slug, or prefix + "resource-" + the
// first 8 characters of the UUID when the slug is empty (as Python). The
// slug is used as it is: rewriting it could map two resources, of
// different tenants, to one project, so a name that is no RFC 1123 label
// is refused (backend.ErrInvalid), never turned into another one.
func ProjectName(prefix string, r backend.Resource) (string, error) {
	part := r.Slug
	if part == "" {
		// str(uuid) is lower-case hex whether Waldur sent dashes or not.
		u := strings.ToLower(r.UUID)
		if len(u) < 8 {
			return "", fault.Errorf(fault.Invalid, "Resource %q has no slug and no UUID to name its Rancher project by", r.UUID)
		}
		part = "resource-" + u[:8]
	}
	name := prefix + part
	if err := kubeapi.ValidateName("Rancher project name", name); err != nil {
		return "", fault.Errorf(fault.Invalid, "%v (from slug %q); it names the project's namespace too", err, r.Slug)
	}
	return name, nil
}

// checkSlugs refuses a resource without customer or project slug, with
// the Python plugin's message (it reaches Waldur as the order's error).
func checkSlugs(r backend.Resource) error {
	if r.CustomerSlug != "" && r.ProjectSlug != "" {
		return nil
	}
	return fault.Errorf(fault.Invalid, "Resource %s has unset or missing slug fields. customer_slug: %s, project_slug: %s. "+
		"Cannot create Rancher projects with invalid slug values.", r.UUID, pyStr(r.CustomerSlug), pyStr(r.ProjectSlug))
}

// ProjectDescription is the description Python gives a new project:
// the resource's name, then the customer's and project's names (or slugs).
func ProjectDescription(r backend.Resource) string {
	or := func(a, b string) string {
		if a != "" {
			return a
		}
		return pyStr(b)
	}
	return fmt.Sprintf("%s (Customer: %s, Project: %s)", pyStr(r.Name), or(r.CustomerName, r.CustomerSlug), or(r.ProjectName, r.ProjectSlug))
}

// ParentGroupName is the cluster's Keycloak group: "c_" and the first 8
// characters of the cluster id without ':' and '-' (c-m-test:p-test gives
// c_cmtestpt).
func ParentGroupName(clusterID string) string {
	s := strings.NewReplacer(":", "", "-", "").Replace(clusterID)
	if len(s) > 8 {
		s = s[:8]
	}
	return "c_" + s
}

// ParentGroupDescription describes the cluster's Keycloak group.
func ParentGroupDescription(clusterID string) string {
	return "Cluster access group for " + clusterID
}

// ChildGroupName is the Keycloak group whose members get role on the
// project of a resource in the Waldur project projectSlug. Python names it
// by the Waldur project's slug (not the resource's), so every resource of
// one Waldur project shares it.
func ChildGroupName(projectSlug, role string) string {
	if projectSlug == "" {
		projectSlug = "unknown-project"
	}
	return "project_" + projectSlug + "_" + role
}

// ChildGroupDescription describes the child group; Python prints an unset
// slug as None.
func ChildGroupDescription(projectSlug, role string) string {
	return "Project " + pyStr(projectSlug) + " members with role " + role
}

// pyStr prints an optional Waldur field as a Python f-string prints it:
// unset (None) when empty.
func pyStr(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// GroupPrincipalID is how Rancher's Keycloak OIDC provider names a group
// in a role binding: by its name (rancher/rancher#33432).
func GroupPrincipalID(group string) string { return "keycloakoidc_group://" + group }
