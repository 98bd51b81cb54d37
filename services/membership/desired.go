package membership

import (
	"maps"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// DefaultRoleMapping maps Waldur project roles to access roles: the Python
// plugin's defaults (manager/admin → admin, member → readwrite) and the
// same for the names Waldur actually sends (PROJECT.MANAGER, ...), which
// the plugin's defaults miss, so that everyone fell back to default_role.
func DefaultRoleMapping() map[string]string {
	return map[string]string{
		"manager": backend.RoleAdmin, "admin": backend.RoleAdmin, "member": backend.RoleReadWrite,
		"PROJECT.MANAGER": backend.RoleAdmin, "PROJECT.ADMIN": backend.RoleAdmin, "PROJECT.MEMBER": backend.RoleReadWrite,
	}
}

// Member is one user who should have access, and how.
type Member struct {
	// Ref identifies the user in the identity provider: the offering
	// username, which is the Keycloak user id or username depending on
	// keycloak_use_user_id.
	Ref string
	// Role is the access role (admin, readwrite, readonly).
	Role string
	// Email is the identity sync_users_to_cr writes by default.
	Email    string
	Username string
	// WaldurRole is the project role as Waldur sends it (PROJECT.MANAGER):
	// backends with a role map of their own (OKD) map it themselves.
	WaldurRole string
}

// Desired computes who should have which access to one resource: every
// team member with an offering username, mapped through roleMapping
// (merged over DefaultRoleMapping), else defaultRole. A resource with
// restrict_member_access has no members. It is a function of Waldur's
// state alone, so applying it is idempotent and order-independent.
func Desired(team []waldur.ProjectUser, roleMapping map[string]string, defaultRole string, restrict bool) map[string]Member {
	mapping := DefaultRoleMapping()
	maps.Copy(mapping, roleMapping)
	return desired(team, mapping, defaultRole, backend.Roles, restrict, false)
}

// DesiredIn is Desired for an offering whose access roles are its own
// (roles, strongest first: a rancher-cluster offering's role templates):
// mapping is the whole mapping, not merged over DefaultRoleMapping, and a
// project role it maps to "" or does not name gives no access at all.
func DesiredIn(team []waldur.ProjectUser, mapping map[string]string, roles []string, restrict bool) map[string]Member {
	return desired(team, mapping, "", roles, restrict, true)
}

// desired maps the team; exclude drops members whose role maps to "".
func desired(team []waldur.ProjectUser, mapping map[string]string, defaultRole string, roles []string, restrict, exclude bool) map[string]Member {
	out := map[string]Member{}
	if restrict {
		return out
	}
	for _, u := range team {
		ref := strings.TrimSpace(u.OfferingUserUsername)
		if ref == "" {
			continue // no offering account yet: nothing to add
		}
		role, ok := mapping[u.Role]
		if !ok {
			role = defaultRole
		}
		if role == "" && exclude {
			continue
		}
		// One user listed twice (two project roles): the stronger role wins.
		if prev, dup := out[ref]; dup && rank(roles, prev.Role) <= rank(roles, role) {
			continue
		}
		out[ref] = Member{Ref: ref, Role: role, Email: u.Email, Username: u.Username, WaldurRole: u.Role}
	}
	return out
}

func rank(roles []string, role string) int {
	for i, r := range roles {
		if r == role {
			return i
		}
	}
	return len(roles)
}

// ByRole groups members by access role, with every role present.
func ByRole(members map[string]Member) map[string][]Member {
	out := map[string][]Member{}
	for _, r := range backend.Roles {
		out[r] = nil
	}
	for _, m := range members {
		out[m.Role] = append(out[m.Role], m)
	}
	return out
}
