package ranchersim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiError is an error answer: norman's {"baseType":"error","type":"error",
// "status":<int>,"code":…,"message":…[,"fieldName":…]}, or with steve set
// steve's {"type":"error","links":{},"code":…,"message":…,"status":…}.
type apiError struct {
	status    int
	code      string
	message   string
	fieldName string
	steve     bool
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func newErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg}
}

func steveErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg, steve: true}
}

func alreadyExists(msg string) *apiError { return newErr(http.StatusConflict, "AlreadyExists", msg) }

func missingRequired(field string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "MissingRequired", fieldName: field}
}

func invalidReference(field, msg string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "InvalidReference", fieldName: field, message: msg}
}

func invalidBody(msg string) *apiError {
	return newErr(http.StatusUnprocessableEntity, "InvalidBodyContent", msg)
}

func invalidAction(action string) *apiError {
	return newErr(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+action)
}

var (
	errNoKube = newErr(http.StatusServiceUnavailable, "ClusterUnavailable",
		"cluster not available: the simulator has no Kubernetes API server")
	errNoRoute   = newErr(http.StatusNotFound, "NotFound", "not found")
	errNoPost    = newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "Method POST not supported")
	errNotNull   = newErr(http.StatusUnprocessableEntity, "NotNullable", "name")
	unauthorized = newErr(http.StatusUnauthorized, "Unauthorized", "registration token is not valid")
)

// unauthorizedBody is Rancher's 401 body verbatim: status is a string and
// there is no code (rancher/rancher#14235), unlike every other error.
const unauthorizedBody = `{"type":"error","status":"401","message":"must authenticate"}`

func writeErr(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"type": "error", "status": e.status, "code": e.code, "message": e.message}
	if e.steve {
		body["links"] = map[string]string{}
	} else {
		body["baseType"] = "error"
	}
	if e.fieldName != "" {
		body["fieldName"] = e.fieldName
	}
	simkit.WriteJSON(w, e.status, body)
}

// handler serves one authenticated API request without a body: its
// answer's body (a simkit.Reply for another status than 200), or an
// *apiError.
type handler = func(r *http.Request, _ struct{}) (any, error)

// handle adapts h (whose In decodeBody reads) once: its answer written as
// JSON, its error in its API's format.
func handle[In any](h func(r *http.Request, in In) (any, error)) http.Handler {
	return simkit.Handle(simkit.Handlers{Decode: decodeBody, WriteError: func(w http.ResponseWriter, err error) {
		writeErr(w, err.(*apiError))
	}}, h)
}

func created(v any) simkit.Reply { return simkit.Reply{Status: http.StatusCreated, Body: v} }

// param is one query parameter as sent.
type param struct{ key, value string }

// rawParams splits a raw query on '&' and each pair at its first '='. The
// Python agent sends some values unencoded (groupPrincipalId=keycloakoidc_
// group://…), so only a valid %XX escape is decoded and '+' stays '+'.
func rawParams(raw string) []param {
	var out []param
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		out = append(out, param{unescape(k), unescape(v)})
	}
	return out
}

func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// paramValue returns the first value of key in the raw query.
func paramValue(r *http.Request, key string) string {
	for _, p := range rawParams(r.URL.RawQuery) {
		if p.key == key {
			return p.value
		}
	}
	return ""
}

// nonFilters are the query parameters norman uses for paging and sorting.
var nonFilters = map[string]bool{"limit": true, "marker": true, "sort": true, "order": true, "reverse": true, "action": true}

// conditions are the norman filters of a list: field=value. Norman's
// _ne and _prefix modifiers are not served: sitebus sends neither.
func conditions(r *http.Request) []param {
	return slices.DeleteFunc(rawParams(r.URL.RawQuery), func(p param) bool { return nonFilters[p.key] })
}

// matches applies the conditions as norman does: a condition on a field the
// resource does not have is ignored; a null field equals nothing.
func matches(obj map[string]any, conds []param) bool {
	for _, c := range conds {
		if v, ok := obj[c.key]; ok && (v == nil || fmt.Sprint(v) != c.value) {
			return false
		}
	}
	return true
}

// collection filters objs by the request's conditions, sorts them by id
// and makes a norman collection of resourceType.
func collection(r *http.Request, resourceType, createURL string, objs []map[string]any) map[string]any {
	conds := conditions(r)
	filters := map[string]any{}
	for _, c := range conds {
		filters[c.key] = []map[string]string{{"modifier": "eq", "value": c.value}}
	}
	data := slices.DeleteFunc(append([]map[string]any{}, objs...), func(o map[string]any) bool { return !matches(o, conds) })
	sort.Slice(data, func(i, j int) bool { return fmt.Sprint(data[i]["id"]) < fmt.Sprint(data[j]["id"]) })
	self := simkit.BaseURL(r) + r.URL.Path
	if r.URL.RawQuery != "" {
		self += "?" + r.URL.RawQuery
	}
	return map[string]any{
		"type":         "collection",
		"resourceType": resourceType,
		"links":        map[string]string{"self": self},
		"createTypes":  map[string]string{resourceType: createURL},
		"actions":      map[string]string{},
		"pagination":   map[string]any{"limit": 1000, "total": len(data)},
		"sort":         map[string]any{"order": "asc", "reverse": self},
		"filters":      filters,
		"data":         data,
	}
}

// decodeBody reads a JSON object body (none into a struct{}); norman
// answers a malformed one with 422 InvalidBodyContent.
func decodeBody(r *http.Request, v any) error {
	if _, none := v.(*struct{}); none {
		return nil
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return invalidBody("Failed to parse body: " + err.Error())
	}
	return nil
}

// Representations are maps, not structs: collection filters match on the
// fields of what is written, as norman's do.

// normanObj completes m, which holds an object's own fields, as every
// norman object: type and baseType typ, links self (also update and
// remove) plus links, actions, the created time, and state active.
func normanObj(typ, self string, created time.Time, m map[string]any, links, actions map[string]string) map[string]any {
	m["type"], m["baseType"] = typ, typ
	m["links"] = map[string]string{"self": self, "update": self, "remove": self}
	maps.Copy(m["links"].(map[string]string), links)
	m["actions"] = map[string]string{}
	maps.Copy(m["actions"].(map[string]string), actions)
	m["created"] = created.UTC().Format(time.RFC3339)
	m["createdTS"] = created.UnixMilli()
	m["state"], m["transitioning"], m["transitioningMessage"] = "active", "no", ""
	return m
}

// removing marks a deleted object's answer, as Rancher's finalizers leave
// it until they are done.
func removing(m map[string]any, transitioning bool) map[string]any {
	m["state"] = "removing"
	if transitioning {
		m["transitioning"] = "yes"
	}
	return m
}
