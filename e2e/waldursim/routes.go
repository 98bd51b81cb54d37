package waldursim

import (
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiHandler serves one authenticated endpoint; a returned *apiError is
// rendered DRF-style.
type apiHandler func(w http.ResponseWriter, r *http.Request, u *User) error

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	handle := func(pattern string, h apiHandler) {
		api.Handle(pattern, s.authed(h))
	}
	// Public, as in Waldur.
	api.HandleFunc("GET /api/version/{$}", s.getVersion)

	handle("GET /api/users/me/{$}", s.getMe)

	handle("GET /api/marketplace-site-agent-identities/{$}", s.listIdentities)
	handle("POST /api/marketplace-site-agent-identities/{$}", s.createIdentity)
	handle("GET /api/marketplace-site-agent-identities/{uuid}/{$}", show(s, func(st *state) map[string]*Identity { return st.identities }, (*Server).identityView))
	handle("PUT /api/marketplace-site-agent-identities/{uuid}/{$}", s.byUUIDBody(s.updateIdentity))
	handle("PATCH /api/marketplace-site-agent-identities/{uuid}/{$}", s.byUUIDBody(s.updateIdentity))
	handle("POST /api/marketplace-site-agent-identities/{uuid}/register_service/{$}", s.byUUIDBody(s.registerService))
	handle("POST /api/marketplace-site-agent-identities/{uuid}/register_event_subscription/{$}", s.registerEventSubscription)
	handle("POST /api/marketplace-site-agent-services/{uuid}/register_processor/{$}", s.byUUIDBody(s.registerProcessor))

	handle("GET /api/event-subscriptions/{$}", s.listSubscriptions)
	handle("GET /api/event-subscriptions/{uuid}/{$}", s.getSubscription)
	handle("DELETE /api/event-subscriptions/{uuid}/{$}", s.deleteSubscription)
	handle("POST /api/event-subscriptions/{uuid}/create_queue/{$}", s.createQueue)

	handle("GET /api/marketplace-provider-offerings/{uuid}/{$}", show(s, func(st *state) map[string]*Offering { return st.offerings }, stateView((*state).offeringView)))
	handle("POST /api/marketplace-provider-offerings/{uuid}/create_offering_component/{$}", s.byUUIDBody(s.createComponent))
	handle("POST /api/marketplace-provider-offerings/{uuid}/update_offering_component/{$}", s.byUUIDBody(s.updateComponent))
	handle("GET /api/marketplace-service-providers/{$}", s.listServiceProviders)
	handle("GET /api/marketplace-plans/{uuid}/{$}", show(s, func(st *state) map[string]*Plan { return st.plans }, stateView((*state).planView)))

	handle("GET /api/marketplace-orders/{$}", s.listOrders)
	handle("GET /api/marketplace-orders/{uuid}/{$}", show(s, func(st *state) map[string]*Order { return st.orders }, stateView((*state).orderView)))
	handle("POST /api/marketplace-orders/{uuid}/{action}/{$}", s.orderAction)

	handle("GET /api/marketplace-provider-resources/{$}", s.listResources)
	handle("GET /api/marketplace-provider-resources/{uuid}/{$}", show(s, func(st *state) map[string]*Resource { return st.resources }, resourceDetail))
	handle("GET /api/marketplace-provider-resources/{uuid}/team/{$}", s.byUUID(s.getTeam))
	handle("POST /api/marketplace-provider-resources/{uuid}/{action}/{$}", s.byUUIDBody(s.resourceAction))

	handle("GET /api/marketplace-component-usages/{$}", s.listUsages)
	handle("POST /api/marketplace-component-usages/set_usage/{$}", s.setUsage)
	handle("POST /api/marketplace-component-usages/{uuid}/set_user_usages/{$}", s.byUUIDBody(s.setUserUsages))
	handle("GET /api/marketplace-component-user-usages/{$}", s.listUserUsages)

	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeErr(w, errNotFound) })

	root := http.NewServeMux()
	root.Handle("/api/", s.latency(s.Faults.Middleware(api)))
	root.Handle("/sim/", s.adminRoutes())
	root.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeErr(w, errNotFound) })
	return root
}

func (s *Server) authed(h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, aerr := s.authenticate(r)
		if aerr != nil {
			w.Header().Set("WWW-Authenticate", `Token`)
			writeErr(w, aerr)
			return
		}
		if err := h(w, r, u); err != nil {
			writeErr(w, err)
		}
	})
}

// byUUID serves a route on one object: {uuid} read as pathUUID does, then
// h under s.mu.
func (s *Server) byUUID(h func(w http.ResponseWriter, r *http.Request, u *User, id string) error) apiHandler {
	return s.onObject(false, func(w http.ResponseWriter, r *http.Request, u *User, id string, _ map[string]any) error {
		return h(w, r, u, id)
	})
}

// show serves the GET of one object by {uuid}: the object of items (or
// Waldur's 404) as view renders it, cut to the ?field= the caller asks for.
func show[T any](s *Server, items func(*state) map[string]*T, view func(*Server, string, *T) map[string]any) apiHandler {
	return s.byUUID(func(w http.ResponseWriter, r *http.Request, _ *User, id string) error {
		v := items(s.st)[id]
		if v == nil {
			return errNotFound
		}
		simkit.WriteJSON(w, http.StatusOK, restrictFields(r, view(s, baseURL(r), v)))
		return nil
	})
}

// stateView is a view of the state as show takes it: a typed view is
// turned into JSON's map, a map is kept as it is.
func stateView[T, V any](view func(*state, string, *T) V) func(*Server, string, *T) map[string]any {
	return func(s *Server, base string, v *T) map[string]any {
		out := view(s.st, base, v)
		if m, ok := any(out).(map[string]any); ok {
			return m
		}
		return toMap(out)
	}
}

// resourceDetail is a resource as Waldur's provider-resources show it:
// without the membership sync statuses.
func resourceDetail(s *Server, base string, res *Resource) map[string]any {
	v := s.st.resourceView(base, res)
	v.MembershipSyncStatuses = nil
	return toMap(v)
}

// byUUIDBody is byUUID for a route that takes a body (decodeBody's).
func (s *Server) byUUIDBody(h func(w http.ResponseWriter, r *http.Request, u *User, id string, body map[string]any) error) apiHandler {
	return s.onObject(true, h)
}

func (s *Server) onObject(withBody bool, h func(http.ResponseWriter, *http.Request, *User, string, map[string]any) error) apiHandler {
	return func(w http.ResponseWriter, r *http.Request, u *User) error {
		id, err := pathUUID(r)
		if err != nil {
			return err
		}
		var body map[string]any
		if withBody {
			b, aerr := decodeBody(r)
			if aerr != nil {
				return aerr
			}
			body = b
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return h(w, r, u, id, body)
	}
}

// pathUUID reads {uuid}; anything that is not a UUID cannot match Waldur's
// lookup and is a 404.
func pathUUID(r *http.Request) (string, error) {
	h, ok := normUUID(r.PathValue("uuid"))
	if !ok {
		return "", errNotFound
	}
	return h, nil
}

// queryUUIDs validates a (possibly repeated) UUID filter.
func queryUUIDs(r *http.Request, fe fieldErrors, key string) []string {
	var out []string
	for _, v := range r.URL.Query()[key] {
		if v == "" {
			continue
		}
		h, ok := normUUID(v)
		if !ok {
			fe.add(key, "Enter a valid UUID.")
			continue
		}
		out = append(out, h)
	}
	return out
}

// queryChoices validates a repeated choice filter (state=a&state=b).
func queryChoices(r *http.Request, fe fieldErrors, key string, valid []string) []string {
	var out []string
	for _, v := range r.URL.Query()[key] {
		if v == "" {
			continue
		}
		ok := false
		for _, c := range valid {
			if c == v {
				ok = true
			}
		}
		if !ok {
			fe.add(key, "Select a valid choice. "+v+" is not one of the available choices.")
			continue
		}
		out = append(out, v)
	}
	return out
}

func matchAny(v string, set []string) bool {
	if len(set) == 0 {
		return true
	}
	for _, s := range set {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}
