package simkit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// thing is a resource of the test's simulated service: owned by an
// account, seen by its owner only.
type thing struct {
	ID, Name, Owner string
	seq             uint64
}

type thingSim struct {
	things map[string]*thing
	seq    uint64
}

type thingIn struct {
	Name string `json:"name"`
}

func serviceErr(status int) func(string) *Error {
	return func(msg string) *Error { return &Error{Status: status, Body: map[string]string{"error": msg}} }
}

func newThingMux(t *testing.T) *http.ServeMux {
	t.Helper()
	sim := &thingSim{things: map[string]*thing{}}
	for i, name := range []string{"a", "b", "c"} {
		sim.things[name] = &thing{ID: name, Name: name, Owner: "alice", seq: uint64(i)}
	}
	sim.things["x"] = &thing{ID: "x", Name: "x", Owner: "bob", seq: 9}
	col := &Collection[*thingSim, string, thing]{
		Plural: "things", Singular: "thing", BadBody: serviceErr(http.StatusBadRequest),
		Items:   func(s *thingSim) map[string]*thing { return s.things },
		Order:   func(v *thing) uint64 { return v.seq },
		Owner:   func(v *thing) string { return v.Owner },
		Visible: func(_ *thingSim, who string, v *thing) bool { return v.Owner == who },
		Render:  func(_ *thingSim, _ *http.Request, v *thing) Obj { return Obj{"id": v.ID, "name": v.Name} },
		Format: &ListFormat{BadRequest: serviceErr(http.StatusBadRequest), Params: []string{"limit", "marker"},
			Links: func(_ *http.Request, body Obj, key, next string) {
				if next != "" {
					body[key+"_next"] = next
				}
			}},
		NotFound: func(id string) *Error { return serviceErr(http.StatusNotFound)("no thing " + id) },
		Allow: func(who, verb string) *Error {
			if verb == "delete" && who != "alice" {
				return serviceErr(http.StatusForbidden)("may not delete")
			}
			return nil
		},
		UpdateMethod: http.MethodPatch,
	}
	mux := http.NewServeMux()
	add := func(pattern string, h Handler[string]) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if e := h(w, r, r.Header.Get("Who")); e != nil {
				WriteError(w, e)
			}
		})
	}
	CRUD(sim, add, "/things", col,
		func(s *thingSim, who string, in thingIn) (*thing, *Error) {
			s.seq++
			v := &thing{ID: in.Name, Name: in.Name, Owner: who, seq: 10 + s.seq}
			s.things[v.ID] = v
			return v, nil
		},
		func(_ *thingSim, _ string, v *thing, in thingIn) *Error { v.Name = in.Name; return nil },
		func(s *thingSim, _ string, v *thing) *Error { delete(s.things, v.ID); return nil })
	if n := col.CountOwned(sim, "alice"); n != 3 {
		t.Fatalf("CountOwned(alice) = %d, want 3", n)
	}
	return mux
}

func TestCollectionServesItsWireFormatFromOptions(t *testing.T) {
	for _, tc := range []struct {
		name, who, method, path, body string
		status                        int
		want                          string
	}{
		{"a list is the caller's objects in order", "alice", "GET", "/things", "", 200,
			`{"things":[{"id":"a","name":"a"},{"id":"b","name":"b"},{"id":"c","name":"c"}]}`},
		{"a field filters a list", "alice", "GET", "/things?name=b", "", 200, `{"things":[{"id":"b","name":"b"}]}`},
		{"a page links the next", "alice", "GET", "/things?limit=2", "", 200,
			`{"things":[{"id":"a","name":"a"},{"id":"b","name":"b"}],"things_next":"limit=2\u0026marker=b"}`},
		{"a marker starts after its object", "alice", "GET", "/things?marker=b", "", 200, `{"things":[{"id":"c","name":"c"}]}`},
		{"an unknown marker is the service's 400", "alice", "GET", "/things?marker=x", "", 400,
			`{"error":"marker [x] not found"}`},
		{"a bad limit is the service's 400", "alice", "GET", "/things?limit=-1", "", 400, `{"error":"Invalid limit \"-1\""}`},
		{"another owner's object is not found", "bob", "GET", "/things/a", "", 404, `{"error":"no thing a"}`},
		{"a show wraps the object", "alice", "GET", "/things/a", "", 200, `{"thing":{"id":"a","name":"a"}}`},
		{"a create answers the object", "bob", "POST", "/things", `{"thing":{"name":"y"}}`, 201,
			`{"thing":{"id":"y","name":"y"}}`},
		{"a malformed body is the service's 400", "bob", "POST", "/things", `{`, 400,
			`{"error":"Malformed request body: unexpected EOF"}`},
		{"an update uses the method of the options", "alice", "PATCH", "/things/a", `{"thing":{"name":"z"}}`, 200,
			`{"thing":{"id":"a","name":"z"}}`},
		{"Allow refuses before the lookup", "bob", "DELETE", "/things/nope", "", 403, `{"error":"may not delete"}`},
		{"a delete answers no body", "alice", "DELETE", "/things/a", "", 204, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := newThingMux(t)
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Who", tc.who)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			got := strings.TrimSpace(rec.Body.String())
			if rec.Code != tc.status || !jsonEqual(got, tc.want) {
				t.Errorf("%s %s = %d %s, want %d %s", tc.method, tc.path, rec.Code, got, tc.status, tc.want)
			}
		})
	}
}

func jsonEqual(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
