package waldursim_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestAuthentication(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	for _, tc := range []struct {
		name, header string
		status       int
		detail       string
	}{
		{"no header is refused", "", 401, "Authentication credentials were not provided."},
		{"unknown token is refused", "Token nope", 401, "Invalid token."},
		{"unknown scheme is refused", "Basic " + token, 401, "Invalid token header. No credentials provided."},
		{"Token scheme is accepted", "Token " + token, 200, ""},
		{"Bearer scheme is accepted", "Bearer " + token, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.URL()+"/api/users/me/", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	r := call(t, s, "GET", "/api/users/me/", "wrong", "")
	if r.body != `{"detail":"Invalid token."}`+"\n" {
		t.Errorf("body %q", r.body)
	}
	var me map[string]any
	call(t, s, "GET", "/api/users/me/?field=uuid", token, "").json(t, &me)
	if len(me) != 1 || me["uuid"] != userUUID {
		t.Errorf("users/me?field=uuid = %v", me)
	}
}

func TestNotFound(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	for _, path := range []string{
		"/api/marketplace-orders/00000000000040008000000000000000/",
		"/api/marketplace-orders/not-a-uuid/",
		"/api/no-such-endpoint/",
		"/api/marketplace-provider-offerings/" + resAlpha + "/",
	} {
		t.Run(path, func(t *testing.T) {
			r := call(t, s, "GET", path, token, "")
			wantStatus(t, r, 404)
			if !strings.Contains(r.body, `"detail":"Not found."`) {
				t.Errorf("body %s", r.body)
			}
		})
	}
	t.Run("missing trailing slash redirects to the slash URL", func(t *testing.T) {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest("GET", s.URL()+"/api/marketplace-provider-resources/"+resAlpha, nil)
		req.Header.Set("Authorization", "Token "+token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("dashed UUIDs are accepted", func(t *testing.T) {
		d := resAlpha[:8] + "-" + resAlpha[8:12] + "-" + resAlpha[12:16] + "-" + resAlpha[16:20] + "-" + resAlpha[20:]
		wantStatus(t, call(t, s, "GET", "/api/marketplace-provider-resources/"+d+"/", token, ""), 200)
	})
}

func TestOrderTransitions(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	act := func(order, action, body string) response {
		return call(t, s, "POST", "/api/marketplace-orders/"+order+"/"+action+"/", token, body)
	}
	steps := []struct {
		name, action, body string
		status             int
	}{
		{"done before approval conflicts", "set_state_done", "", 409},
		{"erred before approval conflicts", "set_state_erred", `{"error_message":"x"}`, 409},
		{"approve pending-provider", "approve_by_provider", "{}", 200},
		{"approve again conflicts", "approve_by_provider", "{}", 409},
		{"done from executing", "set_state_done", "", 200},
		{"done twice conflicts", "set_state_done", "", 409},
		{"unknown action", "frobnicate", "", 404},
	}
	for _, st := range steps {
		r := act(pendingOrd, st.action, st.body)
		if r.status != st.status {
			t.Fatalf("%s: status %d, want %d (%s)", st.name, r.status, st.status, r.body)
		}
		if st.status == 409 && !strings.Contains(r.body, "Valid states for operation") {
			t.Errorf("%s: body %s", st.name, r.body)
		}
	}
	var order waldursim.APIOrder
	call(t, s, "GET", "/api/marketplace-orders/"+pendingOrd+"/", token, "").json(t, &order)
	if order.State != "done" || order.MarketplaceResourceUUID != resBeta {
		t.Errorf("order = %+v", order)
	}
	var res waldursim.APIResource
	call(t, s, "GET", "/api/marketplace-provider-resources/"+resBeta+"/", token, "").json(t, &res)
	if res.State != "OK" {
		t.Errorf("resource state after Create done = %q, want OK", res.State)
	}

	t.Run("erred keeps the error message", func(t *testing.T) {
		ctx := context.Background()
		created, err := s.Admin().CreateOrder(ctx, waldursim.CreateOrderRequest{State: "executing"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, act(created.Order.UUID, "set_state_erred", `{"error_message":"boom","error_traceback":"tb"}`), 200)
		o, err := s.Admin().Order(ctx, created.Order.UUID)
		if err != nil || o.State != "erred" || o.ErrorMessage != "boom" || o.ErrorTraceback != "tb" {
			t.Fatalf("order %+v err %v", o, err)
		}
	})
}

func TestBadBodiesAreRejected(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	res := "/api/marketplace-provider-resources/" + resAlpha + "/"
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"invalid JSON", "POST", res + "set_limits/", `{"limits":`, "detail"},
		{"limits missing", "POST", res + "set_limits/", `{}`, "limits"},
		{"limits not integers", "POST", res + "set_limits/", `{"limits":{"cpu":"many"}}`, "limits"},
		{"endpoints without url", "POST", res + "set_endpoints/", `{"endpoints":[{"name":"api"}]}`, "endpoints.url"},
		{"identity without name", "POST", "/api/marketplace-site-agent-identities/", `{"offering":"` + offering + `"}`, "name"},
		{"identity for unknown offering", "POST", "/api/marketplace-site-agent-identities/",
			`{"offering":"` + resAlpha + `","name":"x"}`, "offering"},
		{"usage of unknown component", "POST", "/api/marketplace-component-usages/set_usage/",
			`{"resource":"` + resAlpha + `","usages":[{"type":"gpu","amount":"1.00"}]}`, "usages"},
		{"bad state filter", "GET", "/api/marketplace-orders/?state=bogus", "", "state"},
		{"bad uuid filter", "GET", "/api/marketplace-orders/?offering_uuid=xyz", "", "offering_uuid"},
		{"bad modified_before", "GET", "/api/marketplace-orders/?modified_before=yesterday", "", "modified_before"},
		{"bad resource state filter", "GET", "/api/marketplace-provider-resources/?state=ok", "", "state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, tc.method, tc.path, token, tc.body)
			wantStatus(t, r, 400)
			var errs map[string]any
			r.json(t, &errs)
			if _, ok := errs[tc.field]; !ok {
				t.Errorf("no %q error in %s", tc.field, r.body)
			}
		})
	}
	t.Run("valid updates are stored", func(t *testing.T) {
		wantStatus(t, call(t, s, "POST", res+"set_limits/", token, `{"limits":{"cpu":6,"ram":12}}`), 200)
		wantStatus(t, call(t, s, "POST", res+"set_backend_metadata/", token, `{"backend_metadata":{"ns":"x"}}`), 200)
		wantStatus(t, call(t, s, "POST", res+"set_as_erred/", token, `{"error_message":"e"}`), 200)
		var got waldursim.APIResource
		call(t, s, "GET", res, token, "").json(t, &got)
		if got.Limits["cpu"] != 6 || got.BackendMetadata["ns"] != "x" || got.State != "Erred" {
			t.Errorf("resource %+v", got)
		}
		wantStatus(t, call(t, s, "POST", res+"set_as_ok/", token, ""), 200)
		call(t, s, "GET", res+"?field=state", token, "").json(t, &got)
		if got.State != "OK" {
			t.Errorf("state after set_as_ok = %q", got.State)
		}
	})
}

var nextLink = regexp.MustCompile(`<([^>]+)>; rel="next"`)

func TestListsPaginateWithLinkHeader(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	for range 24 {
		if _, err := s.Admin().CreateOrder(context.Background(), waldursim.CreateOrderRequest{Silent: true}); err != nil {
			t.Fatal(err)
		}
	}
	// 25 orders, all pending-provider.
	t.Run("default page size is 10 and next links cover everything", func(t *testing.T) {
		url := "/api/marketplace-orders/?offering_uuid=" + offering + "&state=pending-provider&state=executing"
		seen := map[string]bool{}
		pages := 0
		for url != "" {
			r := call(t, s, "GET", url, token, "")
			wantStatus(t, r, 200)
			if r.header.Get("X-Result-Count") != "25" {
				t.Fatalf("X-Result-Count = %q", r.header.Get("X-Result-Count"))
			}
			var page []map[string]any
			r.json(t, &page)
			if pages < 2 && len(page) != 10 {
				t.Fatalf("page %d has %d items", pages+1, len(page))
			}
			for _, o := range page {
				seen[o["uuid"].(string)] = true
			}
			pages++
			url = ""
			if m := nextLink.FindStringSubmatch(r.header.Get("Link")); m != nil {
				url = m[1]
				if !strings.Contains(url, "state=executing") || !strings.Contains(url, "state=pending-provider") {
					t.Fatalf("next link lost repeated params: %s", url)
				}
			}
		}
		if pages != 3 || len(seen) != 25 {
			t.Fatalf("pages %d, distinct orders %d", pages, len(seen))
		}
	})
	t.Run("page_size is capped at 300", func(t *testing.T) {
		var all []map[string]any
		call(t, s, "GET", "/api/marketplace-orders/?page_size=1000", token, "").json(t, &all)
		if len(all) != 25 {
			t.Fatalf("%d items", len(all))
		}
	})
	t.Run("page past the end is 404", func(t *testing.T) {
		wantStatus(t, call(t, s, "GET", "/api/marketplace-orders/?page=9", token, ""), 404)
	})
	t.Run("repeated state filters are ORed", func(t *testing.T) {
		var none, both []map[string]any
		call(t, s, "GET", "/api/marketplace-orders/?state=done&page_size=100", token, "").json(t, &none)
		call(t, s, "GET", "/api/marketplace-orders/?state=done&state=pending-provider&page_size=100", token, "").json(t, &both)
		if len(none) != 0 || len(both) != 25 {
			t.Fatalf("done: %d, done|pending-provider: %d", len(none), len(both))
		}
	})
	t.Run("field restricts the rendered keys", func(t *testing.T) {
		var list []map[string]any
		call(t, s, "GET", "/api/marketplace-provider-resources/?state=OK&field=uuid&field=backend_id", token, "").json(t, &list)
		if len(list) != 1 {
			t.Fatalf("%d OK resources", len(list))
		}
		keys := []string{}
		for k := range list[0] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "backend_id,uuid" {
			t.Fatalf("keys %v", keys)
		}
		var off map[string]any
		call(t, s, "GET", "/api/marketplace-provider-offerings/"+offering+"/?field=components&field=plugin_options", token, "").json(t, &off)
		if len(off) != 2 || off["components"] == nil {
			t.Fatalf("offering %v", off)
		}
	})
}

func TestTeamIsAPlainList(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	var team []map[string]any
	call(t, s, "GET", "/api/marketplace-provider-resources/"+resAlpha+"/team/", token, "").json(t, &team)
	if len(team) != 2 || team[0]["role"] != "PROJECT.ADMIN" || team[1]["offering_user_username"] != "bob01" {
		t.Fatalf("team %v", team)
	}
}

func TestAgentRegistrationWithoutBroker(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	var ident map[string]any
	r := call(t, s, "POST", "/api/marketplace-site-agent-identities/", token,
		`{"offering":"`+offering+`","name":"agent-`+offering+`","version":"0.1","dependencies":[],"config_file_path":"","config_file_content":""}`)
	wantStatus(t, r, 201)
	r.json(t, &ident)
	id := ident["uuid"].(string)
	var list []map[string]any
	call(t, s, "GET", "/api/marketplace-site-agent-identities/?name=agent-"+offering, token, "").json(t, &list)
	if len(list) != 1 {
		t.Fatalf("identities by name: %d", len(list))
	}
	wantStatus(t, call(t, s, "PUT", "/api/marketplace-site-agent-identities/"+id+"/", token,
		`{"offering":"`+offering+`","name":"agent-`+offering+`","version":"0.2"}`), 200)

	var svc map[string]any
	r = call(t, s, "POST", "/api/marketplace-site-agent-identities/"+id+"/register_service/", token, `{"name":"event_process-order","mode":"event_process"}`)
	wantStatus(t, r, 201)
	r.json(t, &svc)
	if procs, ok := svc["processors"].([]any); !ok || len(procs) != 0 {
		t.Fatalf("service processors %v, want []", svc["processors"])
	}

	var sub waldursim.EventSubscription
	r = call(t, s, "POST", "/api/marketplace-site-agent-identities/"+id+"/register_event_subscription/", token,
		`{"observable_object_type":"order","description":"x"}`)
	wantStatus(t, r, 201)
	r.json(t, &sub)
	if sub.UserUUID != userUUID {
		t.Fatalf("subscription user_uuid %q", sub.UserUUID)
	}
	q := "/api/event-subscriptions/" + sub.UUID + "/create_queue/"
	body := `{"offering_uuid":"` + offering + `","object_type":"order"}`
	for _, tc := range []struct {
		name, tok, body string
		status          int
	}{
		{"new queue is created", token, body, 201},
		{"existing queue is returned", token, body, 200},
		{"unknown object type", token, `{"offering_uuid":"` + offering + `","object_type":"orders"}`, 400},
		{"unknown offering", token, `{"offering_uuid":"` + resAlpha + `","object_type":"order"}`, 400},
		{"another user's subscription is invisible", otherToken, body, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, call(t, s, "POST", q, tc.tok, tc.body), tc.status)
		})
	}
	var sq waldursim.SubscriptionQueue
	call(t, s, "POST", q, token, body).json(t, &sq)
	if sq.QueueName != "subscription_"+sub.UUID+"_offering_"+offering+"_order" || sq.Vhost != userUUID {
		t.Fatalf("queue %+v", sq)
	}
}

func TestCallLogAndFaults(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	ctx := context.Background()
	adm := s.Admin()
	if err := adm.AddFault(ctx, waldursim.Fault{Method: "GET", PathPrefix: "/api/marketplace-orders/", Status: 503, Count: 2}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{503, 503, 200} {
		wantStatus(t, call(t, s, "GET", "/api/marketplace-orders/?state=pending-provider", token, ""), want)
	}
	calls, err := adm.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 || slices.ContainsFunc(calls, func(c waldursim.Call) bool {
		return c.Method != "GET" || c.Path != "/api/marketplace-orders/"
	}) {
		t.Fatalf("calls %+v, want 3 order lists", calls)
	}
	if calls[0].Status != 503 || calls[2].Status != 200 || calls[2].Query != "state=pending-provider" {
		t.Fatalf("calls %+v", calls)
	}
	if err := adm.ResetCalls(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _ = adm.Calls(ctx)
	if len(calls) != 0 {
		t.Fatalf("%d calls after reset", len(calls))
	}
	t.Run("cleared faults stop firing", func(t *testing.T) {
		_ = adm.AddFault(ctx, waldursim.Fault{PathPrefix: "/api/", Status: 500, Count: 5})
		_ = adm.ClearFaults(ctx)
		wantStatus(t, call(t, s, "GET", "/api/users/me/", token, ""), 200)
	})
	t.Run("a fault with an unknown field is refused", func(t *testing.T) {
		r := call(t, s, "POST", "/sim/faults", "", `{"path_prefix":"/api/","stauts":500}`)
		wantStatus(t, r, http.StatusBadRequest)
		if !strings.Contains(r.body, `"detail"`) || !strings.Contains(r.body, "stauts") {
			t.Fatalf("body %s, want a detail naming the field", r.body)
		}
		wantStatus(t, call(t, s, "GET", "/api/users/me/", token, ""), 200)
	})
	t.Run("down answers DRF's 503 until up again", func(t *testing.T) {
		wantStatus(t, call(t, s, "POST", "/sim/down", "", `{"down":true}`), http.StatusNoContent)
		r := call(t, s, "GET", "/api/users/me/", token, "")
		wantStatus(t, r, http.StatusServiceUnavailable)
		if !strings.Contains(r.body, `"detail"`) {
			t.Fatalf("body %s, want DRF's detail", r.body)
		}
		wantStatus(t, call(t, s, "POST", "/sim/down", "", `{"down":false}`), http.StatusNoContent)
		wantStatus(t, call(t, s, "GET", "/api/users/me/", token, ""), 200)
	})
}

func TestFixtureRejectsDanglingReferences(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"unknown key", "userz: []"},
		{"bad uuid", "users: [{uuid: nope, username: a, token: t}]"},
		{"order for unknown resource", "orders: [{uuid: b0000000000040008000000000000001, type: Create, state: done, resource: a0000000000040008000000000000001}]"},
		{"invalid order state", `customers: [{uuid: 0b6a7c1d2e3f44a59b8c7d6e5f4a3b21}]
projects: [{uuid: 5e4d3c2b1a0948f7a6e5d4c3b2a19087, customer_uuid: 0b6a7c1d2e3f44a59b8c7d6e5f4a3b21}]
offerings: [{uuid: d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d, customer_uuid: 0b6a7c1d2e3f44a59b8c7d6e5f4a3b21}]
resources: [{uuid: a0000000000040008000000000000001, offering: d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d, project: 5e4d3c2b1a0948f7a6e5d4c3b2a19087}]
orders: [{uuid: b0000000000040008000000000000001, type: Create, state: approved, resource: a0000000000040008000000000000001}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := waldursim.ParseFixture([]byte(tc.yaml)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
