package openstacksim

import (
	"cmp"
	"crypto/subtle"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// caller is who a request authenticates as, from its X-Auth-Token.
type caller struct {
	userID, projectID string // projectID "" for an unscoped token
	admin             bool   // the admin role on projectID
	// urlProject is the {project} of a Cinder URL, which Cinder acts for.
	urlProject string
}

// authenticate resolves the token of r; nil when it is missing, unknown or
// expired. Call with s.mu held.
func (s *Server) authenticate(r *http.Request) *caller {
	t := s.st.tokens[r.Header.Get("X-Auth-Token")]
	if t == nil {
		return nil
	}
	if !s.now().Before(t.expires) {
		delete(s.st.tokens, t.id)
		return nil
	}
	return &caller{userID: t.userID, projectID: t.projectID,
		admin: slices.Contains(s.st.roleNames(t.projectID, t.userID), "admin")}
}

// ExpireTokens makes every issued token expired, as if time had passed: the
// next request with one is a 401 (gophercloud re-authenticates when
// AllowReauth is set).
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.st.tokens)
}

type authDomain struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type authUser struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Domain   *authDomain `json:"domain"`
	Password string      `json:"password"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User authUser `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			AppCred *struct {
				ID     string    `json:"id"`
				Name   string    `json:"name"`
				Secret string    `json:"secret"`
				User   *authUser `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope *struct {
			Project *struct {
				ID     string      `json:"id"`
				Name   string      `json:"name"`
				Domain *authDomain `json:"domain"`
			} `json:"project"`
			Domain *authDomain `json:"domain"`
			System any         `json:"system"`
		} `json:"scope"`
	} `json:"auth"`
}

// domainID resolves a domain reference by id or name: the simulator
// serves Keystone's default domain only.
func (st *state) domainID(d *authDomain) (string, bool) {
	return DefaultDomainID, d != nil && (d.ID == DefaultDomainID || d.ID == "" && strings.EqualFold(d.Name, DefaultDomainName))
}

func (st *state) findUser(u authUser) *User {
	if u.ID != "" {
		return st.users[u.ID]
	}
	dom, ok := st.domainID(u.Domain)
	return simkit.FindBy(st.users, func(x *User) bool { return ok && x.Name == u.Name && x.DomainID == dom })
}

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// issueToken serves POST /v3/auth/tokens: password, token and application
// credential methods, scoped to a project by id or by name and domain.
// Keystone answers every failure with the same 401, so does this.
func (s *Server) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	e := simkit.Decode(r, &req, keystoneBad)
	if e == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		var t *token
		if t, e = s.newToken(req); e == nil {
			w.Header().Set("X-Subject-Token", t.id)
			simkit.WriteJSON(w, http.StatusCreated, obj{"token": s.tokenBody(r, t)})
			return
		}
	}
	simkit.WriteError(w, e)
}

// newToken authenticates req and stores its token. Call with s.mu held.
func (s *Server) newToken(req authRequest) (*token, *apiErr) {
	st, id := s.st, req.Auth.Identity
	var user *User
	var appCred *AppCredential
	var fromToken *token
	method := "password"
	switch {
	case slices.Contains(id.Methods, "password") && id.Password != nil:
		if u := st.findUser(id.Password.User); u != nil && eq(u.password, id.Password.User.Password) {
			user = u
		}
	case slices.Contains(id.Methods, "token") && id.Token != nil:
		method = "token"
		if t := st.tokens[id.Token.ID]; t != nil && s.now().Before(t.expires) {
			user, fromToken = st.users[t.userID], t
		}
	case slices.Contains(id.Methods, "application_credential") && id.AppCred != nil:
		method = "application_credential"
		ac := id.AppCred
		appCred = simkit.FindBy(st.appCreds, func(x *AppCredential) bool {
			return ac.ID != "" && x.ID == ac.ID || ac.ID == "" && ac.User != nil && x.Name == ac.Name &&
				st.findUser(*ac.User) != nil && st.findUser(*ac.User).ID == x.UserID
		})
		if appCred == nil || !eq(appCred.Secret, ac.Secret) {
			return nil, errUnauthorized
		}
		user = st.users[appCred.UserID]
	default:
		return nil, keystoneBad("Expecting to find methods in identity - the server could not comply with the request since it is either malformed or otherwise incorrect.")
	}
	if user == nil || !user.Enabled {
		return nil, errUnauthorized
	}

	projectID := ""
	sc := req.Auth.Scope
	switch {
	case appCred != nil:
		if sc != nil {
			return nil, keystoneErr(401, "Application credentials cannot request a scope.")
		}
		projectID = appCred.ProjectID
	case sc != nil && sc.Project != nil:
		var p *Project
		if sc.Project.ID != "" {
			p = st.projects[sc.Project.ID]
		} else if dom, ok := st.domainID(sc.Project.Domain); ok {
			p = st.projectNamed(dom, sc.Project.Name)
		}
		if p == nil {
			return nil, errUnauthorized
		}
		projectID = p.ID
	case sc != nil:
		return nil, keystoneErr(401, "The simulator scopes tokens to projects only.")
	case fromToken != nil:
		projectID = fromToken.projectID
	default:
		if user.DefaultProjectID != "" && len(st.roleNames(user.DefaultProjectID, user.ID)) > 0 {
			projectID = user.DefaultProjectID
		}
	}
	if projectID != "" {
		if p := st.projects[projectID]; p == nil || !p.Enabled || len(st.roleNames(projectID, user.ID)) == 0 {
			// Keystone: no role on the project is the same 401.
			return nil, errUnauthorized
		}
	}
	now := s.now()
	t := &token{id: "gAAAAA" + randomHex(40), userID: user.ID, projectID: projectID, issued: now,
		expires: now.Add(DefaultTokenTTL), methods: []string{method}, appCredID: cmp.Or(appCred, &AppCredential{}).ID}
	st.tokens[t.id] = t
	return t, nil
}

// tokenBody renders a token; a project-scoped one carries the catalog.
func (s *Server) tokenBody(r *http.Request, t *token) obj {
	st := s.st
	u := st.users[t.userID]
	body := obj{
		"methods":    t.methods,
		"expires_at": t.expires.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":  t.issued.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"audit_ids":  []string{randomHex(11)},
		"user": obj{"id": u.ID, "name": u.Name, "password_expires_at": nil,
			"domain": obj{"id": u.DomainID, "name": DefaultDomainName}},
	}
	if t.projectID == "" {
		return body
	}
	p := st.projects[t.projectID]
	body["project"] = obj{"id": p.ID, "name": p.Name, "domain": obj{"id": p.DomainID, "name": DefaultDomainName}}
	body["is_domain"] = false
	body["roles"] = simkit.Map(st.rolesOf(p.ID, u.ID), func(rl *Role) obj { return obj{"id": rl.ID, "name": rl.Name} })
	if t.appCredID != "" {
		body["application_credential"] = obj{"id": t.appCredID, "name": st.appCreds[t.appCredID].Name, "restricted": true}
	}
	b := simkit.BaseURL(r)
	entry := func(typ, name, url string) obj {
		return obj{"id": randomHex(16), "type": typ, "name": name, "endpoints": []obj{{
			"id": randomHex(16), "interface": "public", "region": s.opts.Region, "region_id": s.opts.Region, "url": url,
		}}}
	}
	body["catalog"] = []obj{
		entry("identity", "keystone", b+"/identity/v3"),
		entry("compute", "nova", b+"/compute/v2.1"),
		entry("network", "neutron", b+"/network"),
		entry("volumev3", "cinderv3", b+"/volume/v3/"+p.ID),
		entry("block-storage", "cinder", b+"/volume/v3/"+p.ID),
		entry("image", "glance", b+"/image"),
	}
	return body
}

func (s *Server) identityVersions(w http.ResponseWriter, r *http.Request) {
	simkit.WriteJSON(w, http.StatusMultipleChoices, obj{"versions": obj{"values": []obj{keystoneVersion(simkit.BaseURL(r))}}})
}

func forbidden(action string) *apiErr {
	return keystoneErr(403, "You are not authorized to perform the requested action: "+action+".")
}

func (s *Server) projectRep(r *http.Request, p *Project) obj {
	return obj{"id": p.ID, "name": p.Name, "domain_id": p.DomainID, "description": p.Description,
		"enabled": p.Enabled, "is_domain": false, "parent_id": p.DomainID, "tags": []string{}, "options": obj{},
		"links": obj{"self": simkit.BaseURL(r) + "/identity/v3/projects/" + p.ID}}
}

// named checks the name and domain of a project or user to create, as
// Keystone's schema and lookup do, and then that no other one has the
// name in the domain (taken: a 409 with Keystone's conflict message).
func (s *Server) named(name, domainID string, taken bool, conflict string) *apiErr {
	return cmp.Or(refuse(name == "", keystoneErr(400, "Invalid input for field 'name': None is not of type 'string'")),
		refuse(domainID != DefaultDomainID, keystoneErr(404, "Could not find domain: "+domainID+".")), refuse(taken, keystoneErr(409, conflict)))
}

type projectIn struct {
	Name        string `json:"name"`
	DomainID    string `json:"domain_id"`
	Description string `json:"description"`
	Enabled     *bool  `json:"enabled"`
}

func (st *state) projectNamed(domain, name string) *Project {
	return simkit.FindBy(st.projects, func(p *Project) bool { return p.DomainID == domain && p.Name == name })
}

func (s *Server) createProject(_ *caller, in projectIn) (*Project, *apiErr) {
	in.DomainID = cmp.Or(in.DomainID, DefaultDomainID)
	if e := s.named(in.Name, in.DomainID, s.st.projectNamed(in.DomainID, in.Name) != nil,
		"Conflict occurred attempting to store project - it is not permitted to have two projects with the same name in the same domain : "+in.Name+"."); e != nil {
		return nil, e
	}
	p := &Project{ID: newHexID(), Name: in.Name, DomainID: in.DomainID, Description: in.Description,
		Enabled: in.Enabled == nil || *in.Enabled, Created: s.now(), seq: s.st.next()}
	s.st.projects[p.ID] = p
	return p, nil
}

// projects are seen by admins and their own members.
var projects = keystoneCollection("projects", "project",
	func(st *state) map[string]*Project { return st.projects }, func(p *Project) uint64 { return p.seq },
	func(p *Project) string { return p.ID },
	func(c *caller, p *Project) bool { return c.admin || c.projectID == p.ID }, (*Server).projectRep)

// keystoneCollection is a Keystone resource: listed to admins only, seen
// by id by whom visible says and forbidden (not unknown) to others, as
// Keystone's policy answers; one page with Keystone's links; written by
// admins only.
func keystoneCollection[T any](plural, singular string, items func(*state) map[string]*T, seq func(*T) uint64,
	owner func(*T) string, visible func(*caller, *T) bool, rep func(*Server, *http.Request, *T) obj) *collection[T] {
	return &collection[T]{
		Plural: plural, Singular: singular, Order: seq, Owner: owner, Render: rep, Format: keystoneList,
		Items:      func(s *Server) map[string]*T { return items(s.st) },
		Visible:    func(_ *Server, c *caller, v *T) bool { return visible(c, v) },
		NotFound:   func(id string) *apiErr { return keystoneErr(404, "Could not find "+singular+": "+id+".") },
		Hidden:     forbidden("identity:get_" + singular),
		ListPolicy: adminOnly("identity:list_" + plural),
		Allow:      func(c *caller, verb string) *apiErr { return adminOnly("identity:" + verb + "_" + singular)(c) },
		BadBody:    keystoneBad,
	}
}

// adminOnly is the policy of an admin-only call.
func adminOnly(action string) func(*caller) *apiErr {
	return func(c *caller) *apiErr { return refuse(!c.admin, forbidden(action)) }
}

// deleteProject removes the project, its role assignments and the tokens
// scoped to it, as Keystone does; the other services keep what the project
// owned (Keystone does not tell them), which the inventory then shows.
func (s *Server) deleteProject(_ *caller, p *Project) *apiErr {
	if s.st.builtin[p] {
		return keystoneErr(403, "The simulator's admin project cannot be deleted.")
	}
	delete(s.st.projects, p.ID)
	delete(s.st.assignments, p.ID)
	s.st.revoke(func(_, project string) bool { return project == p.ID })
	return nil
}

// revoke forgets the tokens and application credentials whose user and
// project gone says are deleted.
func (st *state) revoke(gone func(user, project string) bool) {
	maps.DeleteFunc(st.tokens, func(_ string, t *token) bool { return gone(t.userID, t.projectID) })
	maps.DeleteFunc(st.appCreds, func(_ string, a *AppCredential) bool { return gone(a.UserID, a.ProjectID) })
}

func (s *Server) userRep(r *http.Request, u *User) obj {
	return obj{"id": u.ID, "name": u.Name, "domain_id": u.DomainID, "enabled": u.Enabled,
		"default_project_id": orNil(u.DefaultProjectID), "password_expires_at": nil, "options": obj{},
		"description": u.Description,
		"links":       obj{"self": simkit.BaseURL(r) + "/identity/v3/users/" + u.ID}}
}

type userIn struct {
	Name             string `json:"name"`
	DomainID         string `json:"domain_id"`
	Password         string `json:"password"`
	DefaultProjectID string `json:"default_project_id"`
	Description      string `json:"description"`
	Enabled          *bool  `json:"enabled"`
}

func (s *Server) createUser(_ *caller, in userIn) (*User, *apiErr) {
	in.DomainID = cmp.Or(in.DomainID, DefaultDomainID)
	if e := s.named(in.Name, in.DomainID, s.st.findUser(authUser{Name: in.Name, Domain: &authDomain{ID: in.DomainID}}) != nil,
		"Conflict occurred attempting to store user - Duplicate entry found with name "+in.Name+" at domain ID "+in.DomainID+"."); e != nil {
		return nil, e
	}
	u := &User{ID: newHexID(), Name: in.Name, DomainID: in.DomainID, DefaultProjectID: in.DefaultProjectID,
		Description: in.Description, Enabled: in.Enabled == nil || *in.Enabled, password: in.Password, seq: s.st.next()}
	s.st.users[u.ID] = u
	return u, nil
}

// users are seen by admins and by themselves.
var users = keystoneCollection("users", "user",
	func(st *state) map[string]*User { return st.users }, func(u *User) uint64 { return u.seq },
	func(u *User) string { return u.DefaultProjectID },
	func(c *caller, u *User) bool { return c.admin || c.userID == u.ID }, (*Server).userRep)

func (s *Server) deleteUser(_ *caller, u *User) *apiErr {
	if s.st.builtin[u] {
		return keystoneErr(403, "The simulator's admin user cannot be deleted.")
	}
	delete(s.st.users, u.ID)
	for _, m := range s.st.assignments {
		delete(m, u.ID)
	}
	s.st.revoke(func(user, _ string) bool { return user == u.ID })
	return nil
}

func roleRep(r *http.Request, rl *Role) obj {
	return obj{"id": rl.ID, "name": rl.Name, "domain_id": nil, "description": nil, "options": obj{},
		"links": obj{"self": simkit.BaseURL(r) + "/identity/v3/roles/" + rl.ID}}
}

func (s *Server) listRoles(w http.ResponseWriter, r *http.Request, _ *caller) *apiErr {
	objs := simkit.Map(simkit.SortedBy(s.st.roles, func(rl *Role) string { return rl.Name }),
		func(rl *Role) obj { return roleRep(r, rl) })
	keystoneList.WriteList(w, r, "roles", keystoneList.Filtered(r, objs, nil))
	return nil
}

// assignRole grants {role} on {project} to {user}, an admin's call;
// Keystone answers an unknown one of the three with 404 naming it.
func (s *Server) assignRole(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
	p, u, rl := r.PathValue("project"), r.PathValue("user"), r.PathValue("role")
	if e := cmp.Or(adminOnly("identity:create_grant")(c), refuse(s.st.projects[p] == nil, projects.NotFound(p)),
		refuse(s.st.users[u] == nil, users.NotFound(u)), refuse(s.st.roles[rl] == nil, keystoneErr(404, "Could not find role: "+rl+"."))); e != nil {
		return e
	}
	s.st.assign(p, u, rl)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
