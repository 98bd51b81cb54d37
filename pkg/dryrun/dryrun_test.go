package dryrun_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/dryrun"
)

// platform answers every GET with an object and counts what reached it.
type platform struct {
	mu      sync.Mutex
	reached []string
}

func (p *platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.reached = append(p.reached, r.Method+" "+r.URL.Path)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.URL.Path, "missing") {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_, _ = io.WriteString(w, `{"metadata":{"name":"ns","labels":{"a":"1"}},"spec":{"quota":{"cpu":"1"}}}`)
}

func TestRecorderSendsReadsAndAnswersChanges(t *testing.T) {
	cases := []struct {
		name, method, path, contentType, body string
		target                                string
		wantSent                              bool
		wantStatus                            int
		wantBody                              string
		wantReached                           []string
	}{
		{name: "a read is sent", method: "GET", path: "/ns", target: "kubernetes", wantSent: true, wantStatus: 200,
			wantBody: `{"metadata":{"name":"ns","labels":{"a":"1"}},"spec":{"quota":{"cpu":"1"}}}`, wantReached: []string{"GET /ns"}},
		{name: "a create is answered with the object sent", method: "POST", path: "/ns", target: "kubernetes", body: `{"metadata":{"name":"new"}}`,
			wantStatus: 201, wantBody: `{"metadata":{"name":"new"}}`},
		{name: "a Waldur action is answered with an empty success", method: "POST", path: "/api/x/set_state_done/", target: "waldur", body: `{}`,
			wantStatus: 201, wantBody: `{}`},
		{name: "a merge patch is answered with the object read, patched", method: "PATCH", path: "/ns", target: "kubernetes",
			contentType: "application/merge-patch+json", body: `{"spec":{"quota":{"cpu":"2"}}}`, wantStatus: 200,
			wantBody: `{"metadata":{"name":"ns","labels":{"a":"1"}},"spec":{"quota":{"cpu":"2"}}}`, wantReached: []string{"GET /ns"}},
		{name: "a patch of an object an earlier change would make is answered with it, patched", method: "PATCH", path: "/api/v1/namespaces/missing",
			target: "openshift", contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"b":"2"}}}`, wantStatus: 200,
			wantBody: `{"apiVersion":"v1","kind":"Namespace","metadata":{"labels":{"b":"2"},"name":"missing"}}`, wantReached: []string{"GET /api/v1/namespaces/missing"}},
		{name: "a delete is answered with a Kubernetes success", method: "DELETE", path: "/ns", target: "kubernetes", wantStatus: 200,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`},
		{name: "a delete elsewhere is answered with no content", method: "DELETE", path: "/groups/1", target: "keycloak", wantStatus: 204},
		{name: "a login is sent", method: "POST", path: "/realms/master/protocol/openid-connect/token", target: "keycloak", body: "password=s",
			wantSent: true, wantStatus: 200, wantBody: `{"metadata":{"name":"ns","labels":{"a":"1"}},"spec":{"quota":{"cpu":"1"}}}`,
			wantReached: []string{"POST /realms/master/protocol/openid-connect/token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &platform{}
			srv := httptest.NewServer(p)
			defer srv.Close()
			rec := &dryrun.Recorder{}
			hc := &http.Client{Transport: rec.Wrap(http.DefaultTransport, tc.target)}
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || string(body) != tc.wantBody {
				t.Errorf("answer %d %s, want %d %s", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if strings.Join(p.reached, ",") != strings.Join(tc.wantReached, ",") {
				t.Errorf("the platform got %v, want %v", p.reached, tc.wantReached)
			}
			calls := rec.Calls()
			if len(calls) != 1 {
				t.Fatalf("recorded %v, want one call", calls)
			}
			c := calls[0]
			if c.Sent != tc.wantSent || c.Method != tc.method || c.Path != tc.path || c.Target != tc.target {
				t.Errorf("recorded %+v", c)
			}
			if !c.Sent && c.Body != tc.body {
				t.Errorf("recorded body %q, want %q", c.Body, tc.body)
			}
			if c.Sent && c.Body != "" {
				t.Errorf("a sent call keeps its body %q (a login's is a secret)", c.Body)
			}
		})
	}
}

// The order lifecycle approves an order and later reads it again before
// it sets it done (only an executing order is set done): the read must
// see the state the approval would have made, or the dry run would stop
// short of the run.
func TestAReadOfAnOrderSeesTheStateARecordedActionWouldMake(t *testing.T) {
	waldur := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"uuid":"ab","state":"pending-provider"}`)
	}))
	defer waldur.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "waldur")}
	read := func(path string) string {
		t.Helper()
		resp, err := c.Get(waldur.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := read("/api/marketplace-orders/ab/"); !strings.Contains(got, `"pending-provider"`) {
		t.Fatalf("before any change the order reads %s", got)
	}
	resp, err := c.Post(waldur.URL+"/api/marketplace-orders/ab/approve_by_provider/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := read("/api/marketplace-orders/ab/"); !strings.Contains(got, `"state":"executing"`) {
		t.Errorf("after approve_by_provider the order reads %s, want it executing", got)
	}
	if got := read("/api/marketplace-orders/cd/"); !strings.Contains(got, `"pending-provider"`) {
		t.Errorf("another order reads %s, want it as Waldur answers", got)
	}
}

// A Keycloak group this dry run would create has no id but the
// placeholder; the code then lists its subgroups. The platform would 404,
// so the read is answered here: an object just made has nothing below.
func TestAReadBelowAnObjectOfTheDryRunIsAnsweredEmpty(t *testing.T) {
	p := &platform{}
	srv := httptest.NewServer(p)
	defer srv.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "keycloak")}
	resp, err := c.Get(srv.URL + "/admin/realms/w/groups/" + dryrun.PlaceholderID + "/children")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "[]" {
		t.Errorf("answered %d %s, want 200 []", resp.StatusCode, b)
	}
	if len(p.reached) != 0 {
		t.Errorf("the read reached the platform: %v", p.reached)
	}
	calls := rec.Calls()
	if len(calls) != 1 || !calls[0].Answered || calls[0].Sent || calls[0].Changes() {
		t.Errorf("calls %+v, want one answered read that changes nothing", calls)
	}
}

// A later step reads the Rancher project an earlier step of the same dry
// run would make (to bind a group to it): the read gets the project as
// its create was answered, not the platform's 404.
func TestAReadOfAnObjectTheDryRunWouldMakeGetsIt(t *testing.T) {
	p := &platform{}
	srv := httptest.NewServer(p)
	defer srv.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "rancher")}
	resp, err := c.Post(srv.URL+"/v3/projects", "application/json", strings.NewReader(`{"name":"lab","clusterId":"c-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(srv.URL + "/v3/projects/c-1:" + dryrun.PlaceholderProjectID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `"id":"c-1:` + dryrun.PlaceholderProjectID + `"`; resp.StatusCode != 200 || !strings.Contains(string(b), want) {
		t.Errorf("answered %d %s, want the project made with %s", resp.StatusCode, b, want)
	}
	if len(p.reached) != 0 {
		t.Errorf("the read reached the platform: %v", p.reached)
	}
}

// A terminate removes its project's binding of a group, then lists the
// group's bindings to know whether the group is still used: the listing
// must leave out the binding the dry run would have deleted.
func TestARancherListingLeavesOutWhatTheDryRunWouldDelete(t *testing.T) {
	rancher := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"type":"collection","data":[{"id":"p-1:prtb-a"},{"id":"p-2:prtb-b"}]}`)
	}))
	defer rancher.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "rancher")}
	req, _ := http.NewRequest(http.MethodDelete, rancher.URL+"/v3/projectroletemplatebindings/p-1%3Aprtb-a", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(rancher.URL + "/v3/projectroletemplatebindings?groupPrincipalId=g")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := string(b); strings.Contains(got, "prtb-a") || !strings.Contains(got, "prtb-b") {
		t.Errorf("listing %s, want p-2:prtb-b only", got)
	}
}

// A Keycloak parent group is deleted only when no subgroup is left: after
// the dry run would delete the child, the parent's children leave it out;
// a membership removal deletes no group.
func TestAKeycloakListingLeavesOutAGroupTheDryRunWouldDelete(t *testing.T) {
	kc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `[{"id":"child-1","name":"a"},{"id":"child-2","name":"b"}]`)
	}))
	defer kc.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "keycloak")}
	for _, path := range []string{"/admin/realms/w/users/u-1/groups/child-2", "/admin/realms/w/groups/child-1"} {
		req, _ := http.NewRequest(http.MethodDelete, kc.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := c.Get(kc.URL + "/admin/realms/w/groups/parent/children")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := string(b); strings.Contains(got, "child-1") || !strings.Contains(got, "child-2") {
		t.Errorf("children %s, want child-2 only", got)
	}
}

// The team step of a create puts the team into the groups the first step
// would make: a later search for such a group, or a listing of its
// children, finds it with the placeholder id and the attributes its
// create sent, next to what Keycloak has.
func TestAKeycloakGroupTheDryRunWouldMakeIsFoundByALaterSearch(t *testing.T) {
	kc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/children") {
			t.Errorf("the children of a group of the dry run reached Keycloak: %s", r.URL)
		}
		_, _ = io.WriteString(w, `[{"id":"g-0","name":"theirs"}]`)
	}))
	defer kc.Close()
	rec := &dryrun.Recorder{}
	c := &http.Client{Transport: rec.Wrap(nil, "keycloak")}
	for path, body := range map[string]string{
		"/admin/realms/w/groups": `{"name":"ns_lab_admin","attributes":{"managed_by":["sitebus"]}}`,
		"/admin/realms/w/groups/" + dryrun.PlaceholderID + "/children": `{"name":"role_x"}`,
	} {
		resp, err := c.Post(kc.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	read := func(path string) []map[string]any {
		resp, err := c.Get(kc.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := read("/admin/realms/w/groups?search=ns_lab_admin&exact=true")
	if len(got) != 2 || got[1]["id"] != dryrun.PlaceholderID || got[1]["name"] != "ns_lab_admin" || got[1]["path"] != "/ns_lab_admin" {
		t.Errorf("search answered %v, want Keycloak's group and ns_lab_admin with the placeholder id", got)
	}
	if got := read("/admin/realms/w/groups?search=other&exact=true"); len(got) != 1 {
		t.Errorf("a search of another name answered %v, want Keycloak's answer only", got)
	}
	if got := read("/admin/realms/w/groups/" + dryrun.PlaceholderID + "/children?search=role_x"); len(got) != 1 || got[0]["name"] != "role_x" {
		t.Errorf("children answered %v, want role_x", got)
	}
	for _, c := range rec.Calls() {
		if c.Method == http.MethodGet && c.Changes() {
			t.Errorf("read %s counted as a change", c.Path)
		}
	}
}
