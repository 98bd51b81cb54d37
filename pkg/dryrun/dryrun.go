// Package dryrun is an HTTP transport that runs sitebus's real clients
// (Waldur, Kubernetes, Rancher, OpenShift, Keycloak, OpenStack, Vault)
// without changing anything: reads are sent, so the code sees the
// platform's current state; every call that would change something is
// recorded and answered here instead, as the platform would answer a
// success. `sitebus orders explain` runs an order's handler over it, so
// the calls it lists are those the real run makes.
package dryrun

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// Call is one request the code made.
type Call struct {
	// Target is what it reaches: waldur, kubernetes, rancher, openshift,
	// keycloak, openstack, vault.
	Target string `json:"target"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query,omitempty"`
	// Body of a change, as it would be sent (not kept for logins and
	// Vault, whose bodies are secrets).
	Body string `json:"body,omitempty"`
	// Sent: a read (or a login), sent to the platform; Status is its
	// answer. A change is never sent.
	Sent   bool `json:"sent"`
	Status int  `json:"status,omitempty"`
	// Answered: a read below an object this dry run would have made
	// (its path names PlaceholderID, e.g. the subgroups of a Keycloak
	// group it would create), answered here with an empty list: the
	// platform does not have the object, and right after its create it
	// has nothing below it. Not sent, and no change.
	Answered bool `json:"answered,omitempty"`
}

// Changes reports whether the call would change something (it was not
// sent, and is no read answered here).
func (c Call) Changes() bool { return !c.Sent && !c.Answered }

// PlaceholderID is the id of an object a create of this dry run would
// make where the platform names it in its answer (Keycloak's Location).
const PlaceholderID = "dry-run"

// Recorder wraps transports and keeps the calls made through them, in
// order. Safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
	// orderStates are the states Waldur orders would be in after the
	// changes recorded so far (approve_by_provider, set_state_*), by
	// UUID as the path spells it: a later read of the order answers it,
	// as Waldur would after the change.
	orderStates map[string]string
	// made are the objects Rancher would have made in this dry run, by
	// the path a read of them takes (<collection>/<id>), as answered to
	// their create: a later step reads the project an earlier one made.
	made map[string][]byte
	// gone are the ids of the Rancher objects this dry run would have
	// deleted: a later listing leaves them out, as Rancher's would (the
	// terminate deletes a group only when no project binding of it is
	// left after it removed its own).
	gone map[string]bool
	// groups are the Keycloak groups a create of this dry run would have
	// made, in order: a later step looks them up by name (the team step
	// of a create puts the team into the groups the first step made),
	// and a search or a listing of children then finds them, with
	// PlaceholderID for their id, as Keycloak would have found them.
	groups []madeGroup
}

// madeGroup is a Keycloak group a create of this dry run would have made.
type madeGroup struct {
	// parent is the id of the group it is a child of, "" for a
	// top-level group.
	parent string
	obj    map[string]any
}

// Calls is a copy of the calls made so far, oldest first.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Reset forgets the calls made so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
}

func (r *Recorder) add(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Wrap is rt in dry-run mode for target (the name Call.Target takes).
func (r *Recorder) Wrap(rt http.RoundTripper, target string) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{rec: r, next: rt, target: target}
}

type transport struct {
	rec    *Recorder
	next   http.RoundTripper
	target string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := Call{Target: t.target, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery}
	if t.target == "keycloak" && req.Method == http.MethodGet {
		if parent, search, ok := keycloakGroupSearch(req); ok && t.rec.hasGroups(parent) {
			return t.withMadeGroups(req, c, parent, search)
		}
	}
	if isRead(req) && belowPlaceholder(req.URL.Path) {
		c.Answered, c.Status = true, http.StatusOK
		t.rec.add(c)
		return respond(req, http.StatusOK, []byte("[]")), nil
	}
	if obj := t.rec.madeAt(req); obj != nil {
		c.Answered, c.Status = true, http.StatusOK
		t.rec.add(c)
		return respond(req, http.StatusOK, obj), nil
	}
	if isRead(req) {
		c.Sent = true
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			c.Status = resp.StatusCode
			switch t.target {
			case "waldur":
				resp = t.rec.withOrderState(req, resp)
			case "rancher", "keycloak":
				resp = t.rec.withoutGone(resp)
			}
		}
		t.rec.add(c)
		return resp, err
	}
	switch {
	case t.target == "waldur":
		t.rec.noteOrderState(req)
	case t.target == "rancher" && req.Method == http.MethodDelete, t.target == "keycloak" && isKeycloakGroup(req):
		t.rec.forget(req.URL.Path)
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	if t.target != "vault" {
		c.Body = string(body)
	}
	if t.target == "keycloak" && req.Method == http.MethodPost {
		if parent, _, ok := keycloakGroupSearch(req); ok {
			t.rec.rememberGroup(parent, body)
		}
	}
	t.rec.add(c)
	return t.answer(req, body), nil
}

// keycloakGroupSearch reads a path of Keycloak's groups: the top-level
// groups (/admin/realms/<realm>/groups: parent "") or a group's children
// (…/groups/<parent>/children), with the name a read searches for.
func keycloakGroupSearch(req *http.Request) (parent, search string, ok bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	i := slices.Index(parts, "realms")
	switch {
	case i < 0 || len(parts) < i+3 || parts[i+2] != "groups":
		return "", "", false
	case len(parts) == i+3:
	case len(parts) == i+5 && parts[i+4] == "children":
		parent = parts[i+3]
	default:
		return "", "", false
	}
	return parent, req.URL.Query().Get("search"), true
}

// rememberGroup keeps a Keycloak group a create under parent would make,
// as Keycloak would answer a read of it: its name and attributes as sent,
// PlaceholderID for its id, and its path (a child's under a parent of
// this dry run; Keycloak's own parent's path is not known here).
func (r *Recorder) rememberGroup(parent string, body []byte) {
	var in struct {
		Name       string              `json:"name"`
		Attributes map[string][]string `json:"attributes"`
	}
	if json.Unmarshal(body, &in) != nil || in.Name == "" {
		return
	}
	path := "/" + in.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if parent != "" {
		path = ""
		for _, g := range r.groups {
			if parent == PlaceholderID && g.obj["path"] != "" {
				path = g.obj["path"].(string) + "/" + in.Name
			}
		}
	}
	obj := map[string]any{"id": PlaceholderID, "name": in.Name, "path": path, "attributes": in.Attributes,
		"subGroups": []any{}, "subGroupCount": 0}
	if parent != "" {
		obj["parentId"] = parent
	}
	r.groups = append(r.groups, madeGroup{parent: parent, obj: obj})
}

func (r *Recorder) hasGroups(parent string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.groups, func(g madeGroup) bool { return g.parent == parent })
}

// withMadeGroups answers a search of the top-level groups or a listing of
// a group's children with what Keycloak has (not asked when the parent is
// a group of this dry run, which Keycloak does not have) and the groups
// this dry run would have made there whose name is the search's (all of
// them without one).
func (t *transport) withMadeGroups(req *http.Request, c Call, parent, search string) (*http.Response, error) {
	var items []any
	if parent == PlaceholderID {
		c.Answered, c.Status = true, http.StatusOK
	} else {
		c.Sent = true
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			t.rec.add(c)
			return resp, err
		}
		c.Status = resp.StatusCode
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(data, &items) != nil {
			t.rec.add(c)
			resp.Body = io.NopCloser(bytes.NewReader(data))
			return resp, err
		}
	}
	t.rec.mu.Lock()
	for _, g := range t.rec.groups {
		if g.parent == parent && (search == "" || g.obj["name"] == search) {
			items = append(items, g.obj)
		}
	}
	t.rec.mu.Unlock()
	t.rec.add(c)
	if items == nil {
		items = []any{}
	}
	out, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	return respond(req, http.StatusOK, out), nil
}

// isRead: the request changes nothing on the platform, so it is sent. A
// login changes nothing either, and the reads after it need its token.
func isRead(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return req.Method == http.MethodPost && isLogin(req.URL.Path)
}

// isLogin matches the token endpoints of the platforms sitebus reaches:
// Keycloak's and OpenShift's OAuth token (…/token), OpenStack's Keystone
// (/v3/auth/tokens), Vault's auth methods (/v1/auth/…/login) and Rancher's
// local login (?action=login is a query, so the path ends in /local).
func isLogin(path string) bool {
	path = strings.TrimSuffix(path, "/")
	return strings.HasSuffix(path, "/token") || strings.HasSuffix(path, "/auth/tokens") ||
		strings.HasSuffix(path, "/login") || strings.HasSuffix(path, "/v3-public/localProviders/local")
}

// answer is the success the platform would answer a change with: the
// object as sent for a create or replace, the object as read with the
// merge patch applied for a patch, an empty success for anything else.
func (t *transport) answer(req *http.Request, body []byte) *http.Response {
	status, out := http.StatusOK, []byte("{}")
	kubeLike := t.target == "kubernetes" || t.target == "openshift" || t.target == "rancher"
	switch req.Method {
	case http.MethodPost:
		status = http.StatusCreated
		if kubeLike && json.Valid(body) {
			out = body
			if t.target == "rancher" {
				out = withRancherID(body)
				t.rec.remember(req.URL.Path, out)
			}
		}
	case http.MethodPut:
		if kubeLike && json.Valid(body) {
			out = body
		}
	case http.MethodPatch:
		current := t.read(req)
		if current == nil && kubeLike {
			// Not there yet: an earlier change of this dry run (not
			// sent) would have made it, as a project makes its
			// namespace.
			current = stub(req.URL.Path)
		}
		if current != nil {
			out = current
			if strings.HasPrefix(req.Header.Get("Content-Type"), "application/merge-patch+json") {
				if merged, err := jsonpatch.MergePatch(current, body); err == nil {
					out = merged
				}
			}
		}
	case http.MethodDelete:
		if kubeLike {
			out = []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`)
		} else {
			status, out = http.StatusNoContent, nil
		}
	}
	resp := respond(req, status, out)
	if req.Method == http.MethodPost {
		// Keycloak answers a create with the new object's URL, whose
		// last segment is its id.
		resp.Header.Set("Location", req.URL.String()+"/"+PlaceholderID)
	}
	return resp
}

func respond(req *http.Request, status int, out []byte) *http.Response {
	return &http.Response{
		Status: http.StatusText(status), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(out)),
		ContentLength: int64(len(out)), Request: req,
	}
}

// remember keeps what a create at collection would have made, when its
// answer has an id.
func (r *Recorder) remember(collection string, obj []byte) {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(obj, &v) != nil || v.ID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.made == nil {
		r.made = map[string][]byte{}
	}
	r.made[strings.TrimSuffix(collection, "/")+"/"+v.ID] = obj
}

// madeAt is the object a plain read (no query) of req's path would get
// if this dry run's creates had been sent, nil when none made it.
func (r *Recorder) madeAt(req *http.Request) []byte {
	if req.Method != http.MethodGet || req.URL.RawQuery != "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made[strings.TrimSuffix(req.URL.Path, "/")]
}

// forget notes the id a Rancher delete at path names (its last segment).
func (r *Recorder) forget(path string) {
	id := path[strings.LastIndex(strings.TrimSuffix(path, "/"), "/")+1:]
	if u, err := url.PathUnescape(strings.TrimSuffix(id, "/")); err == nil {
		id = u
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = map[string]bool{}
	}
	r.gone[id] = true
}

// withoutGone leaves out of a Rancher listing ({"data":[…]}) the objects
// this dry run would have deleted.
func (r *Recorder) withoutGone(resp *http.Response) *http.Response {
	r.mu.Lock()
	gone := len(r.gone) > 0
	r.mu.Unlock()
	if !gone || resp.StatusCode != http.StatusOK {
		return resp
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var list map[string]any
	var items []any
	switch {
	case err != nil:
	case json.Unmarshal(data, &list) == nil:
		// Rancher's collection.
		if items, _ = list["data"].([]any); items != nil {
			if kept := r.keep(items); len(kept) != len(items) {
				list["data"] = kept
				if out, err := json.Marshal(list); err == nil {
					data = out
				}
			}
		}
	case json.Unmarshal(data, &items) == nil:
		// Keycloak's list (a group's subgroups).
		if kept := r.keep(items); len(kept) != len(items) {
			if out, err := json.Marshal(kept); err == nil {
				data = out
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Del("Content-Length")
	return resp
}

// keep are the items whose id this dry run would not have deleted.
func (r *Recorder) keep(items []any) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := make([]any, 0, len(items))
	for _, it := range items {
		if obj, ok := it.(map[string]any); ok {
			if id, _ := obj["id"].(string); r.gone[id] {
				continue
			}
		}
		kept = append(kept, it)
	}
	return kept
}

// isKeycloakGroup: req deletes a group (/admin/realms/<realm>/groups/<id>),
// not a membership (/users/<id>/groups/<id>).
func isKeycloakGroup(req *http.Request) bool {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	n := len(parts)
	return req.Method == http.MethodDelete && n >= 4 && parts[n-2] == "groups" && parts[n-4] == "realms"
}

// belowPlaceholder: the path names a collection below an object of this
// dry run (…/<PlaceholderID>/children).
func belowPlaceholder(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == PlaceholderID && i < len(parts)-1 {
			return true
		}
	}
	return false
}

// kinds are the Kubernetes kinds of the resources sitebus patches, by
// the plural a path names them with.
var kinds = map[string]string{
	"namespaces": "Namespace", "resourcequotas": "ResourceQuota", "limitranges": "LimitRange",
	"rolebindings": "RoleBinding", "projects": "Project", "managednamespaces": "ManagedNamespace",
}

// stub is the smallest object a Kubernetes client decodes for the path of
// an object (…/<group>/<version>/[namespaces/<ns>/]<plural>/<name>): its
// apiVersion, kind and name. Nil when the path names no object.
func stub(path string) []byte {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var apiVersion string
	switch {
	case len(parts) >= 4 && parts[0] == "api":
		apiVersion, parts = parts[1], parts[2:]
	case len(parts) >= 5 && parts[0] == "apis":
		apiVersion, parts = parts[1]+"/"+parts[2], parts[3:]
	default:
		return nil
	}
	meta := map[string]any{}
	if len(parts) >= 4 && parts[0] == "namespaces" {
		meta["namespace"], parts = parts[1], parts[2:]
	}
	if len(parts) != 2 {
		return nil
	}
	kind, ok := kinds[parts[0]]
	if !ok {
		return nil
	}
	meta["name"] = parts[1]
	out, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta})
	if err != nil {
		return nil
	}
	return out
}

// PlaceholderProjectID is the id a Rancher project created in a dry run
// gets in place of the one Rancher would assign (c-xxx:p-yyyyy), after its
// cluster's id.
const PlaceholderProjectID = "p-dryrn"

// withRancherID adds the id Rancher assigns to what it creates: a
// project's is its cluster's id and a generated part (PlaceholderProjectID
// here), any other object's is its name.
func withRancherID(body []byte) []byte {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil || obj == nil || obj["id"] != nil {
		return body
	}
	cluster, _ := obj["clusterId"].(string)
	name, _ := obj["name"].(string)
	switch {
	case cluster != "" && (obj["type"] == "project" || obj["type"] == nil):
		obj["id"] = cluster + ":" + PlaceholderProjectID
	case name != "":
		obj["id"] = name
	default:
		return body
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

// read GETs the object a patch would change, nil when it cannot. It is
// not recorded: the real run does not make it.
func (t *transport) read(req *http.Request) []byte {
	get, err := http.NewRequestWithContext(req.Context(), http.MethodGet, req.URL.String(), nil)
	if err != nil {
		return nil
	}
	for _, k := range []string{"Authorization", "Accept", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			get.Header.Set(k, v)
		}
	}
	get.Header.Set("Accept", "application/json")
	resp, err := t.next.RoundTrip(get)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !json.Valid(data) {
		return nil
	}
	return data
}

// orderActions are the Waldur order actions sitebus posts, with the state
// the order is in after each.
var orderActions = map[string]string{
	"approve_by_provider": "executing",
	"set_state_executing": "executing",
	"set_state_done":      "done",
	"set_state_erred":     "erred",
}

// orderPath splits /api/marketplace-orders/<uuid>/[<action>/] into the
// order's UUID and the action ("" for the order itself).
func orderPath(path string) (uuid, action string, ok bool) {
	rest, found := strings.CutPrefix(path, "/api/marketplace-orders/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch len(parts) {
	case 1:
		return parts[0], "", parts[0] != ""
	case 2:
		return parts[0], parts[1], parts[0] != ""
	}
	return "", "", false
}

func (r *Recorder) noteOrderState(req *http.Request) {
	uuid, action, ok := orderPath(req.URL.Path)
	state := orderActions[action]
	if !ok || state == "" || req.Method != http.MethodPost {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orderStates == nil {
		r.orderStates = map[string]string{}
	}
	r.orderStates[strings.ToLower(strings.ReplaceAll(uuid, "-", ""))] = state
}

// withOrderState answers a read of an order whose state a recorded
// change would have moved with that state, as Waldur would: the order
// lifecycle reads it again before it settles (it sets an order done only
// while it is executing).
func (r *Recorder) withOrderState(req *http.Request, resp *http.Response) *http.Response {
	uuid, action, ok := orderPath(req.URL.Path)
	if !ok || action != "" || resp.StatusCode != http.StatusOK {
		return resp
	}
	r.mu.Lock()
	state := r.orderStates[strings.ToLower(strings.ReplaceAll(uuid, "-", ""))]
	r.mu.Unlock()
	if state == "" {
		return resp
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var obj map[string]any
	if err == nil && json.Unmarshal(data, &obj) == nil && obj != nil {
		obj["state"] = state
		if out, err := json.Marshal(obj); err == nil {
			data = out
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Del("Content-Length")
	return resp
}
