package waldursim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// req is what an API handler gets: the caller, the object's {uuid} (read
// as normUUID does: anything else cannot match Waldur's lookup and is a
// 404) and, for POST, PUT and PATCH, the body as decodeBody reads it.
type req struct {
	u    *User
	id   string
	body map[string]any
}

// apiHandler serves one authenticated endpoint, holding s.mu; a returned
// *apiError is answered DRF-style.
type apiHandler = func(r *http.Request, in req) (any, error)

type userKey struct{}

// api is how Waldur's REST API reads requests and writes answers.
var api = simkit.Handlers{Decode: decodeReq, WriteError: writeErr, Render: restrictFields}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h apiHandler) { mux.Handle(pattern, s.guard(true, simkit.Handle(api, h))) }
	// Public, as in Waldur.
	mux.HandleFunc("GET /api/version/{$}", func(w http.ResponseWriter, _ *http.Request) {
		simkit.WriteJSON(w, http.StatusOK, map[string]any{"version": s.cfg.Version, "latest_version": s.cfg.Version})
	})
	handle("GET /api/users/me/{$}", getMe)

	handle("GET /api/marketplace-site-agent-identities/{$}", list(every(&s.st.identities, s.identityView),
		byUUID("offering_uuid", func(v Identity) string { return v.Offering }), byText("name", func(v Identity) string { return v.Name })))
	handle("POST /api/marketplace-site-agent-identities/{$}", s.createIdentity)
	handle("PUT /api/marketplace-site-agent-identities/{uuid}/{$}", object(s.st.identities.Get, s.updateIdentity))
	handle("POST /api/marketplace-site-agent-identities/{uuid}/register_service/{$}", object(s.st.identities.Get, s.registerService))
	handle("POST /api/marketplace-site-agent-identities/{uuid}/register_event_subscription/{$}", s.registerEventSubscription)

	handle("GET /api/event-subscriptions/{$}", list(s.subscriptions))
	handle("POST /api/event-subscriptions/{uuid}/create_queue/{$}", s.createQueue)

	offering := func(id string) *Offering { return s.st.offerings[id] }
	handle("GET /api/marketplace-provider-offerings/{uuid}/{$}", show(offering, s.st.offeringView))
	handle("POST /api/marketplace-provider-offerings/{uuid}/create_offering_component/{$}", object(offering, createComponent))
	handle("POST /api/marketplace-provider-offerings/{uuid}/update_offering_component/{$}", object(offering, updateComponent))

	handle("GET /api/marketplace-orders/{$}", list(every(&s.st.orders, s.st.orderView), orderFilters...))
	handle("GET /api/marketplace-orders/{uuid}/{$}", show(s.st.orders.Get, s.st.orderView))
	handle("POST /api/marketplace-orders/{uuid}/{action}/{$}", object(s.st.orders.Get, s.orderAction))

	handle("GET /api/marketplace-provider-resources/{$}", list(every(&s.st.resources, s.st.resourceView), resourceFilters...))
	handle("GET /api/marketplace-provider-resources/{uuid}/{$}", show(s.st.resources.Get, s.st.resourceView))
	handle("GET /api/marketplace-provider-resources/{uuid}/team/{$}", object(s.st.resources.Get, getTeam))
	handle("POST /api/marketplace-provider-resources/{uuid}/{action}/{$}", object(s.st.resources.Get, s.resourceAction))

	handle("GET /api/marketplace-component-usages/{$}", list(every(&s.st.usages, usageView), usageFilters...))
	handle("POST /api/marketplace-component-usages/set_usage/{$}", s.setUsage)

	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) { writeErr(w, errNotFound) })

	root := http.NewServeMux()
	root.Handle("/api/", s.latency(s.Middleware(mux)))
	root.Handle("/sim/", s.adminRoutes())
	root.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeErr(w, errNotFound) })
	return root
}

// guard serves h holding s.mu (handlers that wait on the broker let go of
// it with unlocked), for an API route once the caller is authenticated.
// The call log has read the body into memory before: a slow client does
// not stall the API.
func (s *Server) guard(auth bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if auth {
			u, err := s.authenticate(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", `Token`)
				writeErr(w, err)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		h.ServeHTTP(w, r)
	})
}

// unlocked runs f without s.mu, which the caller holds: f waits on the
// broker, and the API must not stall behind it.
func (s *Server) unlocked(f func() error) error {
	s.mu.Unlock()
	defer s.mu.Lock()
	return f()
}

// decodeReq fills a req, checking the path's {uuid} before the body.
func decodeReq(r *http.Request, in any) error {
	q := in.(*req)
	q.u, _ = r.Context().Value(userKey{}).(*User)
	if strings.Contains(r.Pattern, "{uuid}") {
		var ok bool
		if q.id, ok = normUUID(r.PathValue("uuid")); !ok {
			return errNotFound
		}
	}
	var err error
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		q.body, err = decodeBody(r)
	}
	return err
}

// object serves a route on one object, got by its {uuid}; Waldur's 404
// when there is none.
func object[T any](get func(id string) *T, h func(r *http.Request, in req, obj *T) (any, error)) apiHandler {
	return func(r *http.Request, in req) (any, error) {
		v := get(in.id)
		if v == nil {
			return nil, errNotFound
		}
		return h(r, in, v)
	}
}

// show serves the GET of one object by {uuid} as view renders it.
func show[T, V any](get func(id string) *T, view func(base string, v *T) V) apiHandler {
	return object(get, func(r *http.Request, _ req, v *T) (any, error) { return view(simkit.BaseURL(r), v), nil })
}

// Waldur's REST_FRAMEWORK settings: LinkHeaderPagination, PAGE_SIZE 10,
// page_size up to 300.
var pages = simkit.PageNumbers{DefaultSize: 10, MaxSize: 300, CountHeader: "X-Result-Count",
	InvalidPage: detail(http.StatusNotFound, "Invalid page.")}

// A filter is one query parameter of a list: its values (only the first
// unless many), each checked and normalised by parse (msg is the field
// error for a bad one, %s the value), and whether an item's field matches
// one (keep).
type filter[V any] struct {
	param string
	many  bool
	parse func(string) (string, bool)
	msg   string
	field func(V) string
	keep  func(got, want string) bool
}

func (f filter[V]) read(r *http.Request, fe fieldErrors) []string {
	vals := r.URL.Query()[f.param]
	if !f.many {
		vals = vals[:min(1, len(vals))]
	}
	var out []string
	for _, v := range slices.DeleteFunc(vals, func(v string) bool { return v == "" }) {
		if p, ok := f.parse(v); ok {
			out = append(out, p)
		} else {
			fe.add(f.param, strings.Replace(f.msg, "%s", v, 1))
		}
	}
	return out
}

// list serves a Waldur list: the items views gives, in order, that every
// filter keeps; one page of them.
func list[V any](views func(r *http.Request, in req) []V, filters ...filter[V]) apiHandler {
	return func(r *http.Request, in req) (any, error) {
		fe := fieldErrors{}
		want := make([][]string, len(filters))
		for i, f := range filters {
			want[i] = f.read(r, fe)
		}
		if err := fe.err(); err != nil {
			return nil, err
		}
		var items []V
		for _, v := range views(r, in) {
			keep := true
			for i, f := range filters {
				keep = keep && (want[i] == nil || slices.ContainsFunc(want[i], func(w string) bool { return f.keep(f.field(v), w) }))
			}
			if keep {
				items = append(items, v)
			}
		}
		return simkit.PageOf(r, pages, items)
	}
}

// every is every object of store, in order, as view renders it.
func every[T, V any](store *simkit.Store[T], view func(base string, v *T) V) func(*http.Request, req) []V {
	return func(r *http.Request, _ req) []V {
		return simkit.Map(store.List(nil), func(v *T) V { return view(simkit.BaseURL(r), v) })
	}
}

// byUUID filters by a (possibly repeated) UUID parameter.
func byUUID[V any](param string, field func(V) string) filter[V] {
	return filter[V]{param, true, normUUID, "Enter a valid UUID.", field, strings.EqualFold}
}

// byChoice filters by a repeated choice parameter (state=a&state=b).
func byChoice[V any](param string, valid []string, field func(V) string) filter[V] {
	return filter[V]{param, true, func(v string) (string, bool) { return v, slices.Contains(valid, v) },
		"Select a valid choice. %s is not one of the available choices.", field, strings.EqualFold}
}

// byText filters by a text parameter, compared exactly.
func byText[V any](param string, field func(V) string) filter[V] {
	return filter[V]{param, false, func(v string) (string, bool) { return v, true }, "", field, equal}
}

// byTime filters by a date/time parameter: items modified before it.
func byTime[V any](param string, field func(V) string) filter[V] {
	valid := func(v string) (string, bool) {
		_, ok := parseTime(v)
		return v, ok
	}
	return filter[V]{param, false, valid, "Enter a valid date/time.", field, func(got, want string) bool {
		t, _ := parseTime(got)
		w, _ := parseTime(want)
		return t.Before(w)
	}}
}

// byPeriod filters by a billing period (any date in the month).
func byPeriod[V any](param string, field func(V) string) filter[V] {
	return filter[V]{param, false, billingPeriod, "Enter a valid date.", field, equal}
}

func equal(got, want string) bool { return got == want }

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04", "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func getMe(r *http.Request, in req) (any, error) {
	u := in.u
	first, last, _ := strings.Cut(u.FullName, " ")
	return map[string]any{
		"uuid": u.UUID, "url": simkit.BaseURL(r) + "/api/users/" + u.UUID + "/", "username": u.Username,
		"full_name": u.FullName, "first_name": first, "last_name": last, "email": u.Email,
		"is_staff": false, "is_support": false, "is_active": true,
	}, nil
}

// Call is one logged /api/ request.
type Call struct {
	Time      time.Time `json:"time"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Query     string    `json:"query"`
	Body      string    `json:"body"`
	Status    int       `json:"status"`
	UserAgent string    `json:"user_agent"`
}

// Fault makes the next Count (default 1) /api/ requests matching Method
// (empty: any) and PathPrefix wait DelayMS and then answer Status with Body
// (Status 0: pass through after the delay).
type Fault = simkit.AdminFault

// latency delays every /api/ answer by Config.Latency.
func (s *Server) latency(next http.Handler) http.Handler {
	if s.cfg.Latency <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(s.cfg.Latency)
		defer t.Stop()
		select {
		case <-t.C:
			next.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}

// Calls returns the log of /api/ calls.
func (s *Server) Calls() []Call {
	return simkit.Map(s.Faults.Calls(), func(c simkit.Call) Call {
		return Call{Time: c.Time, Method: c.Method, Path: c.Path, Query: c.Query, Body: c.Body, Status: c.Status, UserAgent: c.Label}
	})
}

// addFault injects f for its next Count (default 1) matching requests.
func (s *Server) addFault(f simkit.Fault) {
	f.Count = max(f.Count, 1)
	s.AddFault(f)
}

// authenticate resolves "Authorization: Token <t>" or "Bearer <t>" to a
// user, with DRF's messages. Caller holds s.mu.
func (s *Server) authenticate(r *http.Request) (*User, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, detail(http.StatusUnauthorized, "Authentication credentials were not provided.")
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if (!strings.EqualFold(scheme, "Token") && !strings.EqualFold(scheme, "Bearer")) || strings.TrimSpace(tok) == "" {
		return nil, detail(http.StatusUnauthorized, "Invalid token header. No credentials provided.")
	}
	u := s.st.users[strings.TrimSpace(tok)]
	if u == nil {
		return nil, detail(http.StatusUnauthorized, "Invalid token.")
	}
	return u, nil
}
