package waldursim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// CreateOrderRequest is the body of POST /sim/orders. For Create (and
// Restore) a new resource is made; Update and Terminate need ResourceUUID.
type CreateOrderRequest struct {
	OfferingUUID string `json:"offering_uuid,omitempty"` // default: the only offering
	ProjectUUID  string `json:"project_uuid,omitempty"`  // default: the only project
	Type         string `json:"type,omitempty"`          // default Create
	State        string `json:"state,omitempty"`         // default pending-provider
	ResourceUUID string `json:"resource_uuid,omitempty"`
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceSlug defaults to the name (Waldur derives slugs from names;
	// tests set odd ones to probe name validation).
	ResourceSlug string         `json:"resource_slug,omitempty"`
	PlanUUID     string         `json:"plan_uuid,omitempty"`
	Limits       map[string]int `json:"limits,omitempty"`
	Attributes   map[string]any `json:"attributes,omitempty"`
	// Silent suppresses the order event.
	Silent bool `json:"silent,omitempty"`
}

// EventResult reports what an admin operation published.
type EventResult struct {
	Published    []Published `json:"published"`
	PublishError string      `json:"publish_error,omitempty"`
}

// CreateOrderResult is the answer of POST /sim/orders.
type CreateOrderResult struct {
	Order    APIOrder    `json:"order"`
	Resource APIResource `json:"resource"`
	EventResult
}

// FlagsRequest is the body of POST /sim/resources/{uuid}/flags; nil fields
// are left alone.
type FlagsRequest struct {
	Paused               *bool `json:"paused,omitempty"`
	Downscaled           *bool `json:"downscaled,omitempty"`
	RestrictMemberAccess *bool `json:"restrict_member_access,omitempty"`
	Silent               bool  `json:"silent,omitempty"`
}

// FlagsResult is the answer of POST /sim/resources/{uuid}/flags.
type FlagsResult struct {
	Resource APIResource `json:"resource"`
	EventResult
}

// TeamRequest grants (or revokes) a member's role on a resource's team.
type TeamRequest struct {
	ResourceUUID string     `json:"resource_uuid"`
	Member       TeamMember `json:"member"`
	Granted      bool       `json:"granted"`
	Silent       bool       `json:"silent,omitempty"`
}

// TeamResult is the answer of POST /sim/team.
type TeamResult struct {
	Team []TeamMember `json:"team"`
	EventResult
}

// RawEventRequest publishes Body verbatim (it may be invalid JSON) to every
// subscription queue of offering+type, optionally with a forced
// x-message-id (to make duplicates).
type RawEventRequest struct {
	OfferingUUID string `json:"offering_uuid"`
	ObjectType   string `json:"object_type"`
	Body         string `json:"body"`
	MessageID    string `json:"message_id,omitempty"`
}

// SubscriptionInfo is an event subscription with its queues (GET /sim/subscriptions).
type SubscriptionInfo struct {
	EventSubscription
	Queues []SubscriptionQueue `json:"queues"`
}

// admin is how the /sim/ API reads requests (strictly: an unknown field
// is a typo in a test) and writes answers.
var admin = simkit.Handlers{Decode: decodeStrict, WriteError: writeErr}

func (s *Server) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /sim/orders", simkit.Handle(admin, publishing(http.StatusCreated, s.CreateOrder)))
	mux.Handle("GET /sim/orders/{uuid}", s.guard(false, simkit.Handle(admin, show(s.st.orders.Get, s.st.orderView))))
	mux.Handle("GET /sim/orders/{uuid}/answered", simkit.Handle(admin, func(r *http.Request, _ struct{}) (struct{}, error) {
		id, ok := normUUID(r.PathValue("uuid"))
		if !ok {
			return struct{}{}, errNotFound
		}
		if err := s.WaitAnswered(r.Context(), orderRequest(id)); err != nil {
			return struct{}{}, detail(http.StatusGatewayTimeout, err.Error())
		}
		return struct{}{}, nil
	}))
	mux.Handle("GET /sim/resources/{uuid}", s.guard(false, simkit.Handle(admin, show(s.st.resources.Get, s.st.resourceView))))
	mux.Handle("POST /sim/resources/{uuid}/flags", simkit.Handle(admin, func(r *http.Request, req FlagsRequest) (simkit.Reply, error) {
		return publishing(http.StatusOK, func(ctx context.Context, req FlagsRequest) (*FlagsResult, error) {
			return s.SetResourceFlags(ctx, r.PathValue("uuid"), req)
		})(r, req)
	}))
	mux.Handle("POST /sim/team", simkit.Handle(admin, publishing(http.StatusOK, s.SetTeam)))
	mux.Handle("POST /sim/events", simkit.Handle(admin, publishing(http.StatusOK, s.PublishRaw)))
	mux.Handle("GET /sim/calls", simkit.Handle(admin, func(*http.Request, struct{}) ([]Call, error) { return s.Calls(), nil }))
	simkit.Admin{ResetCalls: s.ResetCalls, AddFault: s.addFault, ClearFaults: s.ClearFaults, Down: s.Down,
		Handlers: admin}.Routes(mux)
	mux.Handle("GET /sim/subscriptions", simkit.Handle(admin, func(r *http.Request, _ struct{}) ([]SubscriptionInfo, error) {
		return s.Subscriptions(simkit.BaseURL(r)), nil
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeErr(w, errNotFound) })
	return mux
}

// orderRequest matches the API paths of the order id (hex), however the
// client spells its UUID.
func orderRequest(id string) func(path string) bool {
	return func(path string) bool {
		rest, ok := strings.CutPrefix(path, "/api/marketplace-orders/")
		got, _, _ := strings.Cut(rest, "/")
		n, valid := normUUID(got)
		return ok && valid && n == id
	}
}

// publishing serves an admin POST of a Req whose operation publishes
// events: 502 with the partial result when publishing failed.
func publishing[Req, Res any](ok int, op func(ctx context.Context, req Req) (Res, error)) func(*http.Request, Req) (simkit.Reply, error) {
	return func(r *http.Request, req Req) (simkit.Reply, error) {
		res, err := op(r.Context(), req)
		if _, isAPI := err.(*apiError); isAPI {
			return simkit.Reply{}, err
		} else if err != nil {
			return simkit.Reply{Status: http.StatusBadGateway, Body: res}, nil
		}
		return simkit.Reply{Status: ok, Body: res}, nil
	}
}

// decodeStrict reads an admin request: a req as the API does, nothing
// for struct{}, else a JSON body without unknown fields.
func decodeStrict(r *http.Request, v any) error {
	switch v.(type) {
	case *req:
		return decodeReq(r, v)
	case *struct{}:
		return nil
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return detail(http.StatusBadRequest, "invalid JSON body: "+err.Error())
	}
	return nil
}

func badRequest(format string, a ...any) error {
	return detail(http.StatusBadRequest, fmt.Sprintf(format, a...))
}

// pick is the uuid of an object of m: given's, or the only one's when
// given is empty.
func pick[V any](given string, m map[string]*V, what string) (string, error) {
	if given == "" && len(m) != 1 {
		return "", badRequest("%s_uuid is required (%d %ss exist)", what, len(m), what)
	}
	for k := range m {
		if given == "" {
			return k, nil
		}
	}
	id, ok := normUUID(given)
	if !ok || m[id] == nil {
		return "", badRequest("unknown %s %s", what, given)
	}
	return id, nil
}

// CreateOrder creates an order (and for Create/Restore a resource) and
// publishes the order event when the state is pending-provider or
// pending-consumer, unless Silent.
func (s *Server) CreateOrder(ctx context.Context, req CreateOrderRequest) (*CreateOrderResult, error) {
	req.Type = cmp.Or(req.Type, "Create")
	req.State = cmp.Or(req.State, "pending-provider")
	if !slices.Contains(orderTypes, req.Type) || !slices.Contains(orderStates, req.State) {
		return nil, badRequest("invalid type %q or state %q", req.Type, req.State)
	}
	return changing(s, ctx, func() (*CreateOrderResult, *pendingEvent, error) {
		id, _ := normUUID(req.ResourceUUID)
		res := s.st.resources.Get(id)
		switch {
		case req.ResourceUUID != "" && res == nil:
			return nil, nil, badRequest("unknown resource %s", req.ResourceUUID)
		case req.ResourceUUID == "" && req.Type != "Create" && req.Type != "Restore":
			return nil, nil, badRequest("resource_uuid is required for %s orders", req.Type)
		case req.ResourceUUID == "":
			off, err := pick(req.OfferingUUID, s.st.offerings, "offering")
			if err != nil {
				return nil, nil, err
			}
			proj, err := pick(req.ProjectUUID, s.st.projects, "project")
			if err != nil {
				return nil, nil, err
			}
			id := newUUID()
			name := cmp.Or(req.ResourceName, "res-"+id[:8])
			res = &Resource{UUID: id, Name: name, Slug: cmp.Or(req.ResourceSlug, name), State: "Creating", Offering: off,
				Project: proj, Plan: req.PlanUUID, Limits: req.Limits, Attributes: req.Attributes, Created: s.now(), Modified: s.now()}
			s.st.resources.Put(id, res)
		}
		if state, ok := map[string]string{"Update": "Updating", "Terminate": "Terminating"}[req.Type]; ok {
			res.State = state
		}
		order := &Order{UUID: newUUID(), Type: req.Type, State: req.State, Resource: res.UUID, Plan: req.PlanUUID,
			Limits: req.Limits, Attributes: req.Attributes, Created: s.now(), Modified: s.now()}
		s.st.orders.Put(order.UUID, order)
		var ev *pendingEvent
		if !req.Silent && (order.State == "pending-provider" || order.State == "pending-consumer") {
			ev = s.orderEvent(order)
		}
		return &CreateOrderResult{Order: s.st.orderView(s.URL(), order), Resource: s.st.resourceView(s.URL(), res)}, ev, nil
	})
}

// eventful is an admin operation's result: what it published is reported
// in its EventResult.
type eventful interface{ events() *EventResult }

func (e *EventResult) events() *EventResult { return e }

// changing runs change under s.mu, then publishes the event it made (if
// any), as Mastermind publishes after commit; a failure to publish is
// returned with the result, which reports it.
func changing[R eventful](s *Server, ctx context.Context, change func() (R, *pendingEvent, error)) (R, error) {
	s.mu.Lock()
	out, ev, err := change()
	s.mu.Unlock()
	if err != nil {
		return out, err
	}
	pub, err := s.publish(ctx, ev)
	into := out.events()
	into.Published = append([]Published{}, pub...)
	if err != nil {
		into.PublishError = err.Error()
	}
	return out, err
}

// SetResourceFlags changes paused/downscaled/restrict_member_access and
// publishes a resource event when any of them changed.
func (s *Server) SetResourceFlags(ctx context.Context, resourceUUID string, req FlagsRequest) (*FlagsResult, error) {
	id, _ := normUUID(resourceUUID)
	return changing(s, ctx, func() (*FlagsResult, *pendingEvent, error) {
		res := s.st.resources.Get(id)
		if res == nil {
			return nil, nil, errNotFound
		}
		changed := false
		for _, f := range []struct{ want, cur *bool }{
			{req.Paused, &res.Paused}, {req.Downscaled, &res.Downscaled}, {req.RestrictMemberAccess, &res.RestrictMemberAccess}} {
			if f.want != nil && *f.want != *f.cur {
				*f.cur, changed = *f.want, true
			}
		}
		var ev *pendingEvent
		if changed {
			res.Modified = s.now()
			if !req.Silent {
				ev = s.resourceEvent(res)
			}
		}
		return &FlagsResult{Resource: s.st.resourceView(s.URL(), res)}, ev, nil
	})
}

// SetTeam grants (adds or updates) or revokes a team member of a resource
// and publishes a user_role event.
func (s *Server) SetTeam(ctx context.Context, req TeamRequest) (*TeamResult, error) {
	id, _ := normUUID(req.ResourceUUID)
	m := req.Member
	uid, ok := normUUID(cmp.Or(m.UUID, derivedUUID("user", m.Username)))
	if !ok || m.Username == "" {
		return nil, badRequest("member.username and a valid member.uuid are required")
	}
	m.UUID = uid
	m.OfferingUserUsername = cmp.Or(m.OfferingUserUsername, m.Username)
	m.OfferingUserState = cmp.Or(m.OfferingUserState, "OK")
	if req.Granted && m.Role == "" {
		return nil, badRequest("member.role is required to grant")
	}
	return changing(s, ctx, func() (*TeamResult, *pendingEvent, error) {
		res := s.st.resources.Get(id)
		if res == nil {
			return nil, nil, errNotFound
		}
		i := slices.IndexFunc(res.Team, func(t TeamMember) bool { return t.UUID == m.UUID })
		switch {
		case req.Granted && i >= 0:
			res.Team[i] = m
		case req.Granted:
			res.Team = append(res.Team, m)
		case i >= 0:
			m.Role = cmp.Or(m.Role, res.Team[i].Role)
			res.Team = slices.Delete(res.Team, i, i+1)
		}
		var ev *pendingEvent
		if !req.Silent {
			ev = s.userRoleEvent(res, m, req.Granted)
		}
		return &TeamResult{Team: slices.Clone(res.Team)}, ev, nil
	})
}

// PublishRaw sends an arbitrary body to the subscription queues of
// offering+type.
func (s *Server) PublishRaw(ctx context.Context, req RawEventRequest) (*EventResult, error) {
	off, ok := normUUID(req.OfferingUUID)
	if !ok || req.ObjectType == "" {
		return nil, badRequest("offering_uuid and object_type are required")
	}
	return changing(s, ctx, func() (*EventResult, *pendingEvent, error) {
		return &EventResult{}, &pendingEvent{offering: off, objectType: req.ObjectType, body: req.Body,
			messageID: req.MessageID, targets: s.targetsFor(off, req.ObjectType)}, nil
	})
}

// Subscriptions lists event subscriptions with their queues.
func (s *Server) Subscriptions(base string) []SubscriptionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return simkit.Map(s.st.subs.List(nil), func(sub *EventSubscription) SubscriptionInfo {
		qs := s.st.queues.List(func(q *SubscriptionQueue) bool { return q.EventSubscriptionUUID == sub.UUID })
		return SubscriptionInfo{EventSubscription: subView(base, sub),
			Queues: simkit.Map(qs, func(q *SubscriptionQueue) SubscriptionQueue { return queueView(base, q) })}
	})
}

// AdminClient drives a simulator's /sim/ admin API, so e2e tests (which may
// run the simulator as a separate process) need not hand-write JSON.
type AdminClient struct {
	BaseURL string
	HTTP    *http.Client
}

// NewAdminClient returns a client for the simulator at baseURL.
func NewAdminClient(baseURL string) *AdminClient {
	return &AdminClient{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// AdminError is a non-2xx admin API answer. For 502 (publishing failed)
// the operation itself happened and the typed result is filled in too.
type AdminError struct {
	Status int
	Body   string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("waldursim admin: HTTP %d: %s", e.Status, e.Body)
}

func (c *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && (resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusBadGateway) {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("waldursim admin %s %s: decode: %w", method, path, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		return &AdminError{Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	return nil
}

// CreateOrder creates an order (POST /sim/orders).
func (c *AdminClient) CreateOrder(ctx context.Context, req CreateOrderRequest) (*CreateOrderResult, error) {
	var out CreateOrderResult
	return &out, c.do(ctx, http.MethodPost, "/sim/orders", req, &out)
}

// Order fetches the full order, including state and error_message.
func (c *AdminClient) Order(ctx context.Context, uuid string) (*APIOrder, error) {
	var out APIOrder
	return &out, c.do(ctx, http.MethodGet, "/sim/orders/"+uuid, nil, &out)
}

// Resource fetches the full resource, including membership sync statuses.
func (c *AdminClient) Resource(ctx context.Context, uuid string) (*APIResource, error) {
	var out APIResource
	return &out, c.do(ctx, http.MethodGet, "/sim/resources/"+uuid, nil, &out)
}

// WaitOrder polls until the order is in one of states and every call on
// it has been answered, or ctx ends.
func (c *AdminClient) WaitOrder(ctx context.Context, uuid string, states ...string) (*APIOrder, error) {
	for {
		o, err := c.Order(ctx, uuid)
		if err == nil && slices.Contains(states, o.State) {
			// The order changes state before the call that changed it is
			// answered and logged; wait for that, so a caller that reads
			// the call log next finds the call.
			if err := c.do(ctx, http.MethodGet, "/sim/orders/"+uuid+"/answered", nil, nil); err != nil {
				return o, fmt.Errorf("order %s is %q, but the calls on it were not answered: %w", uuid, o.State, err)
			}
			return o, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("order %s is %q, want one of %v: %w", uuid, o.State, states, ctx.Err())
			}
			return o, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// SetFlags changes resource flags (POST /sim/resources/{uuid}/flags).
func (c *AdminClient) SetFlags(ctx context.Context, resourceUUID string, req FlagsRequest) (*FlagsResult, error) {
	var out FlagsResult
	return &out, c.do(ctx, http.MethodPost, "/sim/resources/"+resourceUUID+"/flags", req, &out)
}

// SetTeam grants or revokes a team role (POST /sim/team).
func (c *AdminClient) SetTeam(ctx context.Context, req TeamRequest) (*TeamResult, error) {
	var out TeamResult
	return &out, c.do(ctx, http.MethodPost, "/sim/team", req, &out)
}

// PublishRaw sends a raw frame (POST /sim/events).
func (c *AdminClient) PublishRaw(ctx context.Context, req RawEventRequest) (*EventResult, error) {
	var out EventResult
	return &out, c.do(ctx, http.MethodPost, "/sim/events", req, &out)
}

// Calls returns the /api/ call log.
func (c *AdminClient) Calls(ctx context.Context) ([]Call, error) {
	var out []Call
	return out, c.do(ctx, http.MethodGet, "/sim/calls", nil, &out)
}

// ResetCalls clears the call log.
func (c *AdminClient) ResetCalls(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/sim/calls", nil, nil)
}

// AddFault injects a fault.
func (c *AdminClient) AddFault(ctx context.Context, f Fault) error {
	return c.do(ctx, http.MethodPost, "/sim/faults", f, nil)
}

// ClearFaults removes injected faults.
func (c *AdminClient) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/sim/faults", nil, nil)
}

// Subscriptions lists event subscriptions and their queues.
func (c *AdminClient) Subscriptions(ctx context.Context) ([]SubscriptionInfo, error) {
	var out []SubscriptionInfo
	return out, c.do(ctx, http.MethodGet, "/sim/subscriptions", nil, &out)
}
