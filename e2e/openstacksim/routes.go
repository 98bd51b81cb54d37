package openstacksim

import (
	"maps"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h handler) { mux.Handle(pattern, s.authed(h)) }
	// root serves a service's version discovery, with and without the
	// trailing slash.
	root := func(path string, h http.HandlerFunc) {
		mux.HandleFunc("GET "+path, h)
		mux.HandleFunc("GET "+path+"/{$}", h)
	}

	// Keystone.
	root("/identity", s.identityVersions)
	root("/identity/v3", versionDoc(http.StatusOK, "version", keystoneVersion))
	mux.HandleFunc("POST /identity/v3/auth/tokens", s.issueToken)
	simkit.CRUD(s, api, "/identity/v3/projects", projects, (*Server).createProject, nil, (*Server).deleteProject)
	simkit.CRUD(s, api, "/identity/v3/users", users, (*Server).createUser, nil, (*Server).deleteUser)
	api("GET /identity/v3/roles", s.listRoles)
	api("PUT /identity/v3/projects/{project}/users/{user}/roles/{role}", s.assignRole)

	// Nova.
	root("/compute", versionDoc(http.StatusOK, "versions", computeVersionDoc))
	root("/compute/v2.1", versionDoc(http.StatusOK, "version", computeVersionDoc))
	api("GET /compute/v2.1/flavors/detail", flavors.List(s))
	api("POST /compute/v2.1/servers", s.createServer)
	mux.Handle("GET /compute/v2.1/servers/detail", s.bootFirst(s.authed(servers.List(s))))
	mux.Handle("GET /compute/v2.1/servers/{id}", s.bootFirst(s.authed(servers.Get(s))))
	api("DELETE /compute/v2.1/servers/{id}", servers.On(s, s.deleteServer))
	novaQuotas := func() []string { return novaQuotaNames }
	api("PUT /compute/v2.1/os-quota-sets/{project}", s.putQuotaSet("project", "os_compute_api:os-quota-sets:update", novaQuotas))

	// Neutron.
	root("/network", versionDoc(http.StatusOK, "versions", networkVersionDoc))
	n := func(pattern string, h handler) { api(pattern, s.neutron(h)) }
	const neutronV2 = "/network/v2.0/"
	simkit.CRUD(s, n, neutronV2+"networks", networks, (*Server).createNetwork, nil, (*Server).deleteNetwork)
	simkit.CRUD(s, n, neutronV2+"subnets", subnets, (*Server).createSubnet, (*Server).updateSubnet, (*Server).deleteSubnet)
	simkit.CRUD(s, n, neutronV2+"ports", ports, (*Server).createPort, (*Server).updatePort, (*Server).deletePort)
	simkit.CRUD(s, n, neutronV2+"security-groups", secGroups, (*Server).createSecGroup, nil, (*Server).deleteSecGroup)
	simkit.CRUD(s, n, neutronV2+"security-group-rules", rules, (*Server).createRule, nil, (*Server).deleteRule)
	simkit.CRUD(s, n, neutronV2+"routers", routers, (*Server).createRouter, (*Server).updateRouter, (*Server).deleteRouter)
	simkit.CRUD(s, n, neutronV2+"floatingips", floatingIPs, (*Server).createFloatingIP, nil, (*Server).deleteFloatingIP)
	n("PUT /network/v2.0/routers/{id}/add_router_interface", s.routerInterface((*Server).addRouterInterface))
	n("PUT /network/v2.0/routers/{id}/remove_router_interface", s.routerInterface((*Server).removeRouterInterface))

	// Cinder.
	root("/volume", versionDoc(http.StatusMultipleChoices, "versions", volumeVersionDoc))
	mux.HandleFunc("GET /volume/v3/{$}", versionDoc(http.StatusOK, "versions", volumeVersionDoc))
	cinder := func(pattern string, h handler) {
		api(strings.Replace(pattern, " ", " /volume/v3/{project}", 1), s.cinder(h))
	}
	cinder("GET /types", volumeTypes.List(s))
	simkit.CRUD(s, cinder, "/volumes", volumes, (*Server).createVolume, nil, (*Server).deleteVolume)
	cinder("GET /volumes/detail", volumes.List(s))
	cinder("PUT /os-quota-sets/{target}", s.putQuotaSet("target", "volume_extension:quotas:update", s.cinderQuotaNames))

	// Glance.
	root("/image", versionDoc(http.StatusOK, "versions", imageVersionDoc))
	mux.HandleFunc("GET /image/versions", versionDoc(http.StatusOK, "versions", imageVersionDoc))
	api("GET /image/v2/images", images.List(s))

	// An unknown path is a 404 in the format of the service its prefix names.
	mux.Handle("/", s.authed(func(_ http.ResponseWriter, r *http.Request, _ *caller) *apiErr {
		return serviceErr(r.URL.Path, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
	}))
	return s.Middleware(mux)
}

// serviceErr is an error in the format of the service path's prefix
// names; neutronType is the NeutronError type if that is Neutron.
func serviceErr(path string, status int, neutronType, msg string) *apiErr {
	switch {
	case strings.HasPrefix(path, "/network/"):
		return neutronErr(status, neutronType, msg)
	case strings.HasPrefix(path, "/compute/"), strings.HasPrefix(path, "/volume/"):
		return novaErr(status, msg)
	case strings.HasPrefix(path, "/image/"):
		return glanceErr(status, msg)
	}
	return keystoneErr(status, msg)
}

// authed checks the X-Auth-Token, as keystonemiddleware does in front of
// every service, then runs h under s.mu.
func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		c := s.authenticate(r)
		if c == nil {
			w.Header().Set("WWW-Authenticate", `Keystone uri="`+simkit.BaseURL(r)+`/identity"`)
			simkit.WriteError(w, errUnauthorized)
			return
		}
		if e := h(w, r, c); e != nil {
			simkit.WriteError(w, e)
		}
	})
}

// cinder checks the {project} of Cinder's URLs against the token, as Cinder
// does for everyone but an admin, and has the caller act for it.
func (s *Server) cinder(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		if p := r.PathValue("project"); p != c.projectID && !c.admin {
			return novaErr(http.StatusForbidden, "Policy doesn't allow volume_extension:volume_tenant_attribute to be performed.")
		}
		in := *c
		in.urlProject = r.PathValue("project")
		return h(w, r, &in)
	}
}

// versionDoc serves a service's version discovery: the document mk makes
// for the request's base URL under key, in a list under "versions".
func versionDoc(status int, key string, mk func(base string) obj) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var doc any = mk(simkit.BaseURL(r))
		if key == "versions" {
			doc = []obj{doc.(obj)}
		}
		simkit.WriteJSON(w, status, obj{key: doc})
	}
}

// version is the version document of id (status, the self link at path)
// with more fields, for a base URL.
func version(id, status, path string, more obj) func(base string) obj {
	return func(b string) obj {
		o := obj{"id": id, "status": status, "links": []obj{{"rel": "self", "href": b + path}}}
		maps.Copy(o, more)
		return o
	}
}

var (
	keystoneVersion = version("v3.14", "stable", "/identity/v3/", obj{"updated": "2020-04-07T00:00:00Z",
		"media-types": []obj{{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}}})
	computeVersionDoc = version("v2.1", "CURRENT", "/compute/v2.1/",
		obj{"version": "2.96", "min_version": "2.1", "updated": "2013-07-23T11:33:21Z"})
	networkVersionDoc = version("v2.0", "CURRENT", "/network/v2.0/", nil)
	volumeVersionDoc  = version("v3.0", "CURRENT", "/volume/v3/",
		obj{"version": "3.70", "min_version": "3.0", "updated": "2023-08-31T00:00:00Z"})
	imageVersionDoc = version("v2.15", "CURRENT", "/image/v2/", nil)
)
