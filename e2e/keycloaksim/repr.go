package keycloaksim

// groupRep is Keycloak's GroupRepresentation. Empty optional fields are
// left out, as Keycloak's JSON mapper does (NON_NULL).
type groupRep struct {
	ID            string               `json:"id"`
	Name          string               `json:"name"`
	Path          string               `json:"path"`
	ParentID      string               `json:"parentId,omitempty"`
	SubGroupCount *int                 `json:"subGroupCount,omitempty"`
	SubGroups     []*groupRep          `json:"subGroups"`
	Attributes    *map[string][]string `json:"attributes,omitempty"`
	RealmRoles    *[]string            `json:"realmRoles,omitempty"`
	ClientRoles   *map[string][]string `json:"clientRoles,omitempty"`
	Access        map[string]bool      `json:"access,omitempty"`
}

var groupAccess = map[string]bool{
	"view": true, "viewMembers": true, "manageMembers": true, "manage": true, "manageMembership": true,
}

// groupRepOf renders g; brief leaves out attributes and roles, as
// briefRepresentation=true does. Since Keycloak 23 subGroups is never
// inlined here (it is always []), and subGroupCount says how many there are.
func (r *realm) groupRepOf(g *group, brief, withCount bool) *groupRep {
	rep := &groupRep{
		ID: g.id, Name: g.name, Path: r.path(g), ParentID: g.parent,
		SubGroups: []*groupRep{}, Access: groupAccess,
	}
	if withCount {
		n := len(r.children(g.id))
		rep.SubGroupCount = &n
	}
	if !brief {
		attrs := cloneAttrs(g.attrs)
		roles := []string{}
		clientRoles := map[string][]string{}
		rep.Attributes, rep.RealmRoles, rep.ClientRoles = &attrs, &roles, &clientRoles
	}
	return rep
}

// userRep is Keycloak's UserRepresentation.
type userRep struct {
	ID                         string          `json:"id"`
	Username                   string          `json:"username"`
	FirstName                  string          `json:"firstName,omitempty"`
	LastName                   string          `json:"lastName,omitempty"`
	Email                      string          `json:"email,omitempty"`
	EmailVerified              bool            `json:"emailVerified"`
	CreatedTimestamp           int64           `json:"createdTimestamp"`
	Enabled                    bool            `json:"enabled"`
	Totp                       bool            `json:"totp"`
	DisableableCredentialTypes []string        `json:"disableableCredentialTypes"`
	RequiredActions            []string        `json:"requiredActions"`
	NotBefore                  int             `json:"notBefore"`
	Access                     map[string]bool `json:"access,omitempty"`
}

var userAccess = map[string]bool{
	"manageGroupMembership": true, "view": true, "mapRoles": true, "impersonate": true, "manage": true,
}

func userRepOf(u *user, brief bool) *userRep {
	rep := &userRep{
		ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
		Email: u.Email, EmailVerified: u.Email != "", CreatedTimestamp: u.created,
		Enabled: !u.Disabled, DisableableCredentialTypes: []string{}, RequiredActions: []string{},
	}
	if !brief {
		rep.Access = userAccess
	}
	return rep
}

// realmRep is the part of RealmRepresentation clients look at.
type realmRep struct {
	ID          string `json:"id"`
	Realm       string `json:"realm"`
	DisplayName string `json:"displayName,omitempty"`
	Enabled     bool   `json:"enabled"`
	SSLRequired string `json:"sslRequired"`
}
