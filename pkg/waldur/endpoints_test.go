package waldur

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEndpoints pins each call's method, path, query and body to what the
// Python agent's Waldur client sends, and checks the response decodes.
func TestEndpoints(t *testing.T) {
	ctx := context.Background()
	yes := true
	period := time.Date(2025, 3, 17, 10, 0, 0, 0, time.UTC)
	usageDate := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

	tests := map[string]struct {
		call      func(c *Client) (any, error)
		response  string
		status    int
		method    string
		path      string
		query     url.Values // page_size is checked separately for lists
		body      string     // JSON; "" means no body
		check     func(t *testing.T, got any)
		paginated bool
	}{
		"list identities by name": {
			call:     func(c *Client) (any, error) { return c.ListAgentIdentities(ctx, "agent-off1") },
			response: `[{"uuid":"i1","name":"agent-off1"}]`,
			method:   "GET", path: "/api/marketplace-site-agent-identities/",
			query: url.Values{"name": {"agent-off1"}}, paginated: true,
			check: func(t *testing.T, got any) {
				if ids := got.([]AgentIdentity); len(ids) != 1 || ids[0].UUID != "i1" {
					t.Errorf("got %+v", ids)
				}
			},
		},
		"register service": {
			call:     func(c *Client) (any, error) { return c.RegisterService(ctx, "i1", "order_process", "order_process") },
			response: `{"uuid":"s1","name":"order_process","mode":"order_process","state":"active"}`,
			method:   "POST", path: "/api/marketplace-site-agent-identities/i1/register_service/",
			body: `{"name":"order_process","mode":"order_process"}`,
			check: func(t *testing.T, got any) {
				if s := got.(*AgentService); s.UUID != "s1" || s.Mode != "order_process" {
					t.Errorf("got %+v", s)
				}
			},
		},
		"register event subscription": {
			call: func(c *Client) (any, error) {
				return c.RegisterEventSubscription(ctx, "i1", "order", "sub for agent-off1")
			},
			response: `{"uuid":"es1","user_uuid":"u1","url":"https://w/api/event-subscriptions/es1/","observable_objects":[{"object_type":"order"}]}`,
			method:   "POST", path: "/api/marketplace-site-agent-identities/i1/register_event_subscription/",
			body: `{"observable_object_type":"order","description":"sub for agent-off1"}`,
			check: func(t *testing.T, got any) {
				es := got.(*EventSubscription)
				if es.UUID != "es1" || es.UserUUID != "u1" || es.URL == "" || !strings.Contains(string(es.ObservableObjects), "order") {
					t.Errorf("got %+v", es)
				}
			},
		},
		"create queue new": {
			call:     func(c *Client) (any, error) { return c.CreateQueue(ctx, "es1", "off1", "order") },
			status:   201,
			response: `{"uuid":"q1","queue_name":"subscription_es1_offering_off1_order","vhost":"u1","object_type":"order","offering_uuid":"off1","event_subscription_uuid":"es1","created":"2025-01-02T03:04:05.123456Z"}`,
			method:   "POST", path: "/api/event-subscriptions/es1/create_queue/",
			body: `{"offering_uuid":"off1","object_type":"order"}`,
			check: func(t *testing.T, got any) {
				q := got.(*Queue)
				if q.UUID != "q1" || q.Vhost != "u1" || q.QueueName == "" || q.OfferingUUID != "off1" || q.Created == nil {
					t.Errorf("got %+v", q)
				}
			},
		},
		"create queue existing": {
			call:     func(c *Client) (any, error) { return c.CreateQueue(ctx, "es1", "off1", "resource") },
			status:   200,
			response: `{"uuid":"q2","queue_name":"qn","vhost":"u1","object_type":"resource","offering_uuid":"off1"}`,
			method:   "POST", path: "/api/event-subscriptions/es1/create_queue/",
			body: `{"offering_uuid":"off1","object_type":"resource"}`,
			check: func(t *testing.T, got any) {
				if q := got.(*Queue); q.UUID != "q2" {
					t.Errorf("got %+v", q)
				}
			},
		},
		"me with fields": {
			call:     func(c *Client) (any, error) { return c.Me(ctx, "uuid") },
			response: `{"uuid":"u1"}`,
			method:   "GET", path: "/api/users/me/", query: url.Values{"field": {"uuid"}},
			check: func(t *testing.T, got any) {
				if u := got.(*User); u.UUID != "u1" {
					t.Errorf("got %+v", u)
				}
			},
		},
		"version": {
			call:     func(c *Client) (any, error) { return c.Version(ctx) },
			response: `{"version":"7.5.1"}`,
			method:   "GET", path: "/api/version/",
			check: func(t *testing.T, got any) {
				if v := got.(*VersionInfo); v.Version != "7.5.1" {
					t.Errorf("got %+v", v)
				}
			},
		},
		"list offering components keeps every field": {
			call:     func(c *Client) (any, error) { return c.OfferingComponents(ctx, "off1") },
			response: `{"components":[{"uuid":"k1","type":"cpu","name":"CPU","billing_type":"limit","limit_amount":8,"min_prepaid_duration":null}]}`,
			method:   "GET", path: "/api/marketplace-provider-offerings/off1/",
			query: url.Values{"field": {"components"}},
			check: func(t *testing.T, got any) {
				cs := got.([]OfferingComponent)
				if len(cs) != 1 || cs[0].UUID != "k1" || cs[0].Fields["limit_amount"] != float64(8) {
					t.Errorf("got %+v", cs)
				}
				if _, ok := cs[0].Fields["min_prepaid_duration"]; !ok {
					t.Errorf("a null field is not kept: %v", cs[0].Fields)
				}
			},
		},
		"list event subscriptions": {
			call:     func(c *Client) (any, error) { return c.ListEventSubscriptions(ctx) },
			response: `[{"uuid":"e1","user_uuid":"u1"}]`,
			method:   "GET", path: "/api/event-subscriptions/", paginated: true,
			check: func(t *testing.T, got any) {
				if es := got.([]EventSubscription); len(es) != 1 || es[0].UUID != "e1" || es[0].UserUUID != "u1" {
					t.Errorf("got %+v", es)
				}
			},
		},
		"create offering component as the Python agent": {
			call: func(c *Client) (any, error) {
				return nil, c.CreateOfferingComponent(ctx, "off1", ComponentRequest{BillingType: "one", Type: "gpu", Name: "GPU",
					MeasuredUnit: "units", Optional: map[string]any{"is_prepaid": true, "limit_period": "month"}})
			},
			status: 201, response: ``,
			method: "POST", path: "/api/marketplace-provider-offerings/off1/create_offering_component/",
			body: `{"billing_type":"one","type":"gpu","name":"GPU","measured_unit":"units","limit_amount":null,"is_prepaid":true,"limit_period":"month"}`,
		},
		"update offering component names it by uuid": {
			call: func(c *Client) (any, error) {
				limit := 64.0
				return nil, c.UpdateOfferingComponent(ctx, "off1", ComponentRequest{UUID: "k1", BillingType: "limit", Type: "cpu",
					Name: "CPU", MeasuredUnit: "cores", LimitAmount: &limit})
			},
			response: ``,
			method:   "POST", path: "/api/marketplace-provider-offerings/off1/update_offering_component/",
			body: `{"uuid":"k1","billing_type":"limit","type":"cpu","name":"CPU","measured_unit":"cores","limit_amount":64}`,
		},
		"get offering with repeated fields": {
			call: func(c *Client) (any, error) {
				return c.GetOffering(ctx, "off1", "components", "customer_uuid", "partitions", "plugin_options")
			},
			response: `{"uuid":"off1","customer_uuid":"c1","components":[{"type":"cpu","name":"CPU","billing_type":"limit","limit_amount":null,"unit_factor":1000}],"partitions":[],"plugin_options":{"enable_membership_sync_status":true}}`,
			method:   "GET", path: "/api/marketplace-provider-offerings/off1/",
			query: url.Values{"field": {"components", "customer_uuid", "partitions", "plugin_options"}},
			check: func(t *testing.T, got any) {
				o := got.(*Offering)
				if o.CustomerUUID != "c1" || len(o.Components) != 1 || o.Components[0].LimitAmount != nil ||
					o.Components[0].UnitFactor == nil || *o.Components[0].UnitFactor != 1000 ||
					o.PluginOptions["enable_membership_sync_status"] != true {
					t.Errorf("got %+v", o)
				}
			},
		},
		"list orders with modified_before": {
			call: func(c *Client) (any, error) {
				return c.ListOrders(ctx, OrderFilter{
					OfferingUUID:   "off1",
					States:         []string{"pending-provider", "executing"},
					ModifiedBefore: time.Date(2025, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600)),
				})
			},
			response: `[]`,
			method:   "GET", path: "/api/marketplace-orders/", paginated: true,
			query: url.Values{
				"offering_uuid":   {"off1"},
				"state":           {"pending-provider", "executing"},
				"modified_before": {"2025-03-01T11:30:00Z"},
			},
		},
		"get order": {
			call:     func(c *Client) (any, error) { return c.GetOrder(ctx, "o1", "uuid", "state") },
			response: `{"uuid":"o1","state":"executing"}`,
			method:   "GET", path: "/api/marketplace-orders/o1/",
			query: url.Values{"field": {"uuid", "state"}},
			check: func(t *testing.T, got any) {
				if o := got.(*Order); o.State != OrderStateExecuting {
					t.Errorf("got %+v", o)
				}
			},
		},
		"get full order": {
			call: func(c *Client) (any, error) { return c.GetOrder(ctx, "3f2a9c1e-0000-4000-8000-000000000001") },
			response: `{"uuid":"3f2a9c1e000040008000000000000001","type":"Create","state":"pending-provider",
				"resource_uuid":"r1","marketplace_resource_uuid":"r1","offering_uuid":"off1",
				"project_uuid":"p1","project_slug":"proj","customer_uuid":"c1","customer_slug":"cust",
				"limits":{"cpu":4,"ram":1.5},"attributes":{"name":"ns","extra":[1,2]},"plan_uuid":null,
				"created":"2025-01-02T03:04:05.123456Z","modified":"2025-01-02T03:04:06+02:00",
				"error_message":"","backend_id":"","unknown_field":42}`,
			method: "GET", path: "/api/marketplace-orders/3f2a9c1e-0000-4000-8000-000000000001/",
			check: func(t *testing.T, got any) {
				o := got.(*Order)
				if o.Type != OrderTypeCreate || o.ProjectSlug != "proj" || o.CustomerSlug != "cust" ||
					o.Limits["ram"] != 1.5 || !strings.Contains(string(o.Attributes), `"extra":[1,2]`) ||
					o.Created.IsZero() || o.MarketplaceResourceUUID != "r1" {
					t.Errorf("got %+v", o)
				}
			},
		},
		"approve order sends empty object": {
			call:   func(c *Client) (any, error) { return nil, c.ApproveOrderByProvider(ctx, "o1") },
			method: "POST", path: "/api/marketplace-orders/o1/approve_by_provider/", body: `{}`,
		},
		"set order done sends no body": {
			call:   func(c *Client) (any, error) { return nil, c.SetOrderStateDone(ctx, "o1") },
			method: "POST", path: "/api/marketplace-orders/o1/set_state_done/",
		},
		"set order erred": {
			call:   func(c *Client) (any, error) { return nil, c.SetOrderStateErred(ctx, "o1", "quota exceeded", "tb") },
			method: "POST", path: "/api/marketplace-orders/o1/set_state_erred/",
			body: `{"error_message":"quota exceeded","error_traceback":"tb"}`,
		},
		"get resource": {
			call: func(c *Client) (any, error) { return c.GetResource(ctx, "r1") },
			response: `{"uuid":"r1","name":"Res","slug":"res","state":"OK","backend_id":"ns-1","paused":true,
				"restrict_member_access":false,"backend_metadata":{"k":"v"},"end_date":"2025-12-31","limits":{"cpu":2}}`,
			method: "GET", path: "/api/marketplace-provider-resources/r1/",
			check: func(t *testing.T, got any) {
				r := got.(*Resource)
				if r.BackendID != "ns-1" || !r.Paused || r.EndDate != "2025-12-31" || r.BackendMetadata["k"] != "v" || r.Limits["cpu"] != 2 {
					t.Errorf("got %+v", r)
				}
			},
		},
		"list provider resources": {
			call: func(c *Client) (any, error) {
				return c.ListProviderResources(ctx, ResourceFilter{
					OfferingUUID: "off1", States: []string{"OK", "Erred"}, Fields: []string{"uuid", "name"},
				})
			},
			response: `[{"uuid":"r1","backend_id":"b1"},{"uuid":"r2","backend_id":""}]`,
			method:   "GET", path: "/api/marketplace-provider-resources/", paginated: true,
			query: url.Values{"offering_uuid": {"off1"}, "state": {"OK", "Erred"}, "field": {"uuid", "name"}},
			check: func(t *testing.T, got any) {
				if rs := got.([]Resource); len(rs) != 2 {
					t.Errorf("without the flag nothing is dropped; got %+v", rs)
				}
			},
		},
		"list provider resources by backend id": {
			call: func(c *Client) (any, error) {
				return c.ListProviderResources(ctx, ResourceFilter{OfferingUUID: "off1", BackendID: "waldur-alpha"})
			},
			response: `[{"uuid":"r1","backend_id":"waldur-alpha"}]`,
			method:   "GET", path: "/api/marketplace-provider-resources/", paginated: true,
			query: url.Values{"offering_uuid": {"off1"}, "backend_id": {"waldur-alpha"}},
		},
		"list provider resources dropping empty backend ids": {
			call: func(c *Client) (any, error) {
				return c.ListProviderResources(ctx, ResourceFilter{
					OfferingUUID: "off1", Fields: []string{"uuid"}, DropEmptyBackendID: true,
				})
			},
			response: `[{"uuid":"r1","backend_id":"b1"},{"uuid":"r2","backend_id":""},{"uuid":"r3"}]`,
			method:   "GET", path: "/api/marketplace-provider-resources/", paginated: true,
			query: url.Values{"offering_uuid": {"off1"}, "field": {"uuid", "backend_id"}},
			check: func(t *testing.T, got any) {
				if rs := got.([]Resource); len(rs) != 1 || rs[0].UUID != "r1" {
					t.Errorf("got %+v", rs)
				}
			},
		},
		"resource team with consent": {
			call:     func(c *Client) (any, error) { return c.GetResourceTeam(ctx, "r1", &yes) },
			response: `[{"uuid":"u1","username":"alice","role":"PROJECT.ADMIN","offering_user_username":"alice01","offering_user_state":"OK","expiration_time":null,"url":"https://w/api/users/u1/"}]`,
			method:   "GET", path: "/api/marketplace-provider-resources/r1/team/", paginated: true,
			query: url.Values{"has_consent": {"true"}},
			check: func(t *testing.T, got any) {
				team := got.([]ProjectUser)
				if len(team) != 1 || team[0].OfferingUserUsername != "alice01" || team[0].Role != "PROJECT.ADMIN" || team[0].ExpirationTime != nil {
					t.Errorf("got %+v", team)
				}
			},
		},
		"resource team without consent filter": {
			call:     func(c *Client) (any, error) { return c.GetResourceTeam(ctx, "r1", nil) },
			response: `[]`,
			method:   "GET", path: "/api/marketplace-provider-resources/r1/team/", paginated: true,
		},
		"set resource backend id": {
			call:   func(c *Client) (any, error) { return nil, c.SetResourceBackendID(ctx, "r1", "ns-1") },
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_backend_id/", body: `{"backend_id":"ns-1"}`,
		},
		"set resource limits": {
			call: func(c *Client) (any, error) {
				return nil, c.SetResourceLimits(ctx, "r1", map[string]int64{"cpu": 4, "ram": 8192})
			},
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_limits/",
			body: `{"limits":{"cpu":4,"ram":8192}}`,
		},
		"set resource backend metadata": {
			call: func(c *Client) (any, error) {
				return nil, c.SetResourceBackendMetadata(ctx, "r1", map[string]any{"namespace": "ns-1", "ready": true})
			},
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_backend_metadata/",
			body: `{"backend_metadata":{"namespace":"ns-1","ready":true}}`,
		},
		"set resource endpoints": {
			call: func(c *Client) (any, error) {
				return nil, c.SetResourceEndpoints(ctx, "r1", []Endpoint{{Name: "console", URL: "https://k8s/ns-1"}})
			},
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_endpoints/",
			body: `{"endpoints":[{"name":"console","url":"https://k8s/ns-1"}]}`,
		},
		"set resource erred": {
			call:   func(c *Client) (any, error) { return nil, c.SetResourceErred(ctx, "r1", "boom", "") },
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_as_erred/",
			body: `{"error_message":"boom","error_traceback":""}`,
		},
		"set resource ok": {
			call:   func(c *Client) (any, error) { return nil, c.SetResourceOK(ctx, "r1") },
			method: "POST", path: "/api/marketplace-provider-resources/r1/set_as_ok/",
		},
		"list component usages": {
			call:     func(c *Client) (any, error) { return c.ListComponentUsages(ctx, "r1hex", period) },
			response: `[{"uuid":"cu1","type":"cpu","usage":"12.50"},{"uuid":"cu2","type":"ram","usage":3}]`,
			method:   "GET", path: "/api/marketplace-component-usages/", paginated: true,
			query: url.Values{"resource_uuid": {"r1hex"}, "billing_period": {"2025-03-01"}, "field": {"uuid", "type", "usage"}},
			check: func(t *testing.T, got any) {
				us := got.([]ComponentUsageRecord)
				if len(us) != 2 || us[0].Usage.String() != "12.50" || us[1].Usage.String() != "3" {
					t.Errorf("got %+v", us)
				}
			},
		},
		"list an offering's component usages in one paged call": {
			call:     func(c *Client) (any, error) { return c.ListOfferingComponentUsages(ctx, "o1hex", period) },
			response: `[{"uuid":"cu1","resource_uuid":"r1","type":"cpu","usage":"12.50"},{"uuid":"cu2","resource_uuid":"r2","type":"ram","usage":3}]`,
			method:   "GET", path: "/api/marketplace-component-usages/", paginated: true,
			query: url.Values{"offering_uuid": {"o1hex"}, "billing_period": {"2025-03-01"}, "field": {"uuid", "resource_uuid", "type", "usage"}},
			check: func(t *testing.T, got any) {
				us := got.([]ComponentUsageRecord)
				if len(us) != 2 || us[0].ResourceUUID != "r1" || us[1].ResourceUUID != "r2" || us[0].Usage.String() != "12.50" {
					t.Errorf("got %+v", us)
				}
			},
		},
		"set usage formats amounts": {
			call: func(c *Client) (any, error) {
				return nil, c.SetUsage(ctx, SetUsageRequest{
					Usages:   []ComponentUsage{{Type: "cpu", Amount: 12.345}, {Type: "ram", Amount: 0}},
					Resource: "r1hex",
					Date:     usageDate,
				})
			},
			status: 201, method: "POST", path: "/api/marketplace-component-usages/set_usage/",
			body: `{"usages":[{"type":"cpu","amount":"12.35"},{"type":"ram","amount":"0.00"}],"resource":"r1hex","date":"2025-03-01T00:00:00Z"}`,
		},
	}

	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = 200
			}
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if status == 204 {
					w.WriteHeader(204)
					return
				}
				writeJSON(w, status, tc.response)
			})
			c := newTestClient(t, srv.URL)
			got, err := tc.call(c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.Path != tc.path {
				t.Errorf("request = %s %s, want %s %s", r.Method, r.Path, tc.method, tc.path)
			}
			q := r.Query
			if tc.paginated {
				if q.Get("page_size") != "100" {
					t.Errorf("page_size = %q, want 100", q.Get("page_size"))
				}
				q.Del("page_size")
			}
			want := tc.query
			if want == nil {
				want = url.Values{}
			}
			if !reflect.DeepEqual(q, want) {
				t.Errorf("query = %v, want %v", q, want)
			}
			if tc.body == "" {
				if r.Body != "" {
					t.Errorf("body = %q, want none", r.Body)
				}
			} else if !jsonEqual(t, r.Body, tc.body) {
				t.Errorf("body = %s\nwant   %s", r.Body, tc.body)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

// jsonEqual compares JSON documents ignoring key order and whitespace.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("bad JSON %q: %v", a, err)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad expected JSON %q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestRegisterAgentIdentity(t *testing.T) {
	restarted := time.Date(2025, 5, 1, 14, 0, 0, 0, time.FixedZone("EEST", 3*3600))
	req := AgentIdentityRequest{
		Offering:      "off1",
		Name:          "agent-off1",
		Version:       "1.2.3",
		LastRestarted: restarted,
		Dependencies:  []Dependency{{Package: "sitebus-k8s", Version: "1.2.3"}},
	}
	wantBody := `{"offering":"off1","name":"agent-off1","version":"1.2.3","last_restarted":"2025-05-01T11:00:00Z",` +
		`"dependencies":[{"package":"sitebus-k8s","version":"1.2.3"}],"config_file_path":"","config_file_content":""}`

	// A tiny in-memory Waldur: the first registration creates, the second updates.
	var stored []AgentIdentity
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/marketplace-site-agent-identities/":
			var out []AgentIdentity
			for _, id := range stored {
				// Waldur's name filter may be a substring match.
				if strings.Contains(id.Name, r.URL.Query().Get("name")) {
					out = append(out, id)
				}
			}
			b, _ := json.Marshal(out)
			writeJSON(w, 200, string(b))
		case r.Method == "POST" && r.URL.Path == "/api/marketplace-site-agent-identities/":
			stored = append(stored, AgentIdentity{UUID: "i1", Name: "agent-off1"})
			writeJSON(w, 201, `{"uuid":"i1","name":"agent-off1"}`)
		case r.Method == "PUT" && r.URL.Path == "/api/marketplace-site-agent-identities/i1/":
			writeJSON(w, 200, `{"uuid":"i1","name":"agent-off1","version":"1.2.3"}`)
		default:
			writeJSON(w, 404, `{"detail":"Not found."}`)
		}
	})
	// A near-namesake that must not be updated.
	stored = append(stored, AgentIdentity{UUID: "other", Name: "agent-off1-old"})
	c := newTestClient(t, srv.URL)

	for i, wantMethod := range []string{"POST", "PUT"} {
		id, err := c.RegisterAgentIdentity(context.Background(), req)
		if err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
		if id.UUID != "i1" {
			t.Errorf("registration %d: uuid = %q", i+1, id.UUID)
		}
		reqs := srv.requests()
		last := reqs[len(reqs)-1]
		if last.Method != wantMethod {
			t.Errorf("registration %d: method = %s, want %s", i+1, last.Method, wantMethod)
		}
		if !jsonEqual(t, last.Body, wantBody) {
			t.Errorf("registration %d body = %s\nwant %s", i+1, last.Body, wantBody)
		}
		if get := reqs[len(reqs)-2]; get.Method != "GET" || get.Query.Get("name") != "agent-off1" {
			t.Errorf("registration %d lookup = %+v", i+1, get)
		}
	}
	if n := srv.count(); n != 4 {
		t.Errorf("requests = %d, want 4 (GET POST GET PUT)", n)
	}
}

func TestRegisterAgentIdentityDefaultsLastRestartedToNowUTC(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			writeJSON(w, 200, `[]`)
			return
		}
		writeJSON(w, 201, `{"uuid":"i1"}`)
	})
	c := newTestClient(t, srv.URL)
	before := time.Now().Add(-time.Second)
	if _, err := c.RegisterAgentIdentity(context.Background(), AgentIdentityRequest{Offering: "off1", Name: "agent-off1"}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		LastRestarted string `json:"last_restarted"`
		Dependencies  []any  `json:"dependencies"`
	}
	reqs := srv.requests()
	if err := json.Unmarshal([]byte(reqs[1].Body), &body); err != nil {
		t.Fatal(err)
	}
	ts, err := time.Parse(time.RFC3339Nano, body.LastRestarted)
	if err != nil || !strings.HasSuffix(body.LastRestarted, "Z") || ts.Before(before) {
		t.Errorf("last_restarted = %q (%v)", body.LastRestarted, err)
	}
	if body.Dependencies == nil || !strings.Contains(reqs[1].Body, `"dependencies":[]`) {
		t.Errorf("dependencies must be an empty list, body = %s", reqs[1].Body)
	}
}
