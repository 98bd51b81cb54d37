package openstacksim

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiErr is an error answer with its body already in the service's format.
type apiErr = simkit.Error

// keystoneErr is Keystone's {"error":{"code","message","title"}}.
func keystoneErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Message: msg, Body: map[string]any{"error": map[string]any{
		"code": status, "message": msg, "title": http.StatusText(status)}}}
}

// novaErr is Nova's and Cinder's {"<kind>":{"code","message"}}.
func novaErr(status int, msg string) *apiErr {
	kind := cmp.Or(map[int]string{400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest",
		413: "overLimit"}[status], "computeFault")
	inner := map[string]any{"code": status, "message": msg}
	if status == http.StatusRequestEntityTooLarge {
		inner["retryAfter"] = "0"
	}
	return &apiErr{Status: status, Message: msg, Body: map[string]any{kind: inner}}
}

// neutronErr is Neutron's {"NeutronError":{"type","message","detail"}}.
func neutronErr(status int, typ, msg string) *apiErr {
	return &apiErr{Status: status, Message: msg, Body: map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": msg, "detail": ""}}}
}

// glanceErr is Glance's plain text error page.
func glanceErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Message: msg, Body: fmt.Sprintf("%d %s\n\n%s\n\n   ", status, http.StatusText(status), msg)}
}

// errUnauthorized is keystonemiddleware's answer to a missing, unknown or
// expired token, the same in front of every service.
var errUnauthorized = keystoneErr(http.StatusUnauthorized, "The request you have made requires authentication.")

// The services' 400s, for simkit.Decode and list formats.
func keystoneBad(msg string) *apiErr { return keystoneErr(http.StatusBadRequest, msg) }
func novaBad(msg string) *apiErr     { return novaErr(http.StatusBadRequest, msg) }
func neutronBad(msg string) *apiErr  { return neutronErr(http.StatusBadRequest, "HTTPBadRequest", msg) }
func glanceBad(msg string) *apiErr   { return glanceErr(http.StatusBadRequest, msg) }

// Time formats of the services' JSON.
const (
	isoZ     = "2006-01-02T15:04:05Z"       // Nova, Neutron, Keystone, Glance
	isoMicro = "2006-01-02T15:04:05.000000" // Cinder, Nova's launched_at
)

func fmtTime(t time.Time) string  { return t.UTC().Format(isoZ) }
func fmtMicro(t time.Time) string { return t.UTC().Format(isoMicro) }
func orNil(s string) any          { return simkit.OrNil(s) }

// refuse is one check of a request, for cmp.Or (see simkit.Refuse).
var refuse = simkit.Refuse[apiErr]

// nullable is a request field that may be absent, null or a value.
type nullable[T any] = simkit.Nullable[T]

// handler serves one authenticated API request under s.mu; a returned error
// is written as is.
type handler = simkit.Handler[*caller]

// collection is one resource of any service on simkit's generic
// collection, so filters, paging and error answers are one code for all.
type collection[T any] = simkit.Collection[*Server, *caller, T]

// obj is a rendered resource.
type obj = simkit.Obj

// listParams are query parameters that page, sort or shape a list rather
// than filter it.
var listParams = []string{"limit", "marker", "sort_key", "sort_dir", "fields", "page_reverse", "all_tenants",
	"all_projects", "with_count"}

// linksFormat is how Nova, Neutron and Cinder page a list:
// "<key>_links":[{"rel":"next","href":…}]; bad is the service's 400.
func linksFormat(bad func(string) *apiErr) *simkit.ListFormat {
	return &simkit.ListFormat{BadRequest: bad, Params: listParams,
		Links: func(r *http.Request, body obj, key, next string) {
			if next == "" {
				return
			}
			// gophercloud reads Cinder's volume_type_links, singular.
			lk := strings.Replace(key, "volume_types", "volume_type", 1) + "_links"
			body[lk] = []obj{{"rel": "next", "href": simkit.BaseURL(r) + r.URL.Path + "?" + next}}
		}}
}

var (
	neutronList = linksFormat(neutronBad)
	novaList    = linksFormat(novaBad) // Nova's and Cinder's
	// glanceList links the next page with "next":"/v2/images?…", relative
	// to the service root.
	glanceList = &simkit.ListFormat{BadRequest: glanceBad, Params: listParams,
		Links: func(_ *http.Request, body obj, _, next string) {
			body["first"], body["schema"] = "/v2/images", "/v2/schemas/images"
			if next != "" {
				body["next"] = "/v2/images?" + next
			}
		}}
	// keystoneList is one page with "links":{"self","next":null,"previous":null}.
	keystoneList = &simkit.ListFormat{OnePage: true, BadRequest: keystoneBad, Params: listParams,
		Links: func(r *http.Request, body obj, _, _ string) {
			self := simkit.BaseURL(r) + r.URL.Path
			if r.URL.RawQuery != "" {
				self += "?" + r.URL.RawQuery
			}
			body["links"] = obj{"self": self, "next": nil, "previous": nil}
		}}
)

// hasMeta is a pointer to a resource with a Meta.
type hasMeta[T any] interface {
	*T
	meta() *Meta
}

// ownedCollection is a resource with a Meta: in creation order, seen by
// its project's members and admins.
func ownedCollection[T any, P hasMeta[T]](plural, singular string, items func(*state) map[string]*T,
	format *simkit.ListFormat, notFound func(string) *apiErr) *collection[T] {
	return &collection[T]{
		Plural: plural, Singular: singular, Format: format, NotFound: notFound,
		Items:   func(s *Server) map[string]*T { return items(s.st) },
		Order:   func(v *T) uint64 { return P(v).meta().seq },
		Owner:   func(v *T) string { return P(v).meta().ProjectID },
		Visible: func(_ *Server, c *caller, v *T) bool { return c.owns(P(v).meta().ProjectID) },
	}
}

// neutronCollection is a Neutron resource: 404 naming noun, Neutron's
// 400, next links in "<plural>_links".
func neutronCollection[T any, P hasMeta[T]](plural, singular, noun string, items func(*state) map[string]*T, rep func(*Server, *T) obj) *collection[T] {
	col := ownedCollection[T, P](plural, singular, items, neutronList, func(id string) *apiErr { return nfound(noun, id) })
	col.Render = func(s *Server, _ *http.Request, v *T) obj { return rep(s, v) }
	col.BadBody = badInput
	return col
}

// optionsCollection serves objects of Options (flavors, images, volume
// types) in their order there.
func optionsCollection[T any](plural, singular string, all func(*Options) []T, id func(*T) string,
	rep func(*http.Request, *T) obj, format *simkit.ListFormat, notFound func(string) *apiErr) *collection[T] {
	ptrs := func(s *Server) []*T {
		var out []*T
		for i := range all(&s.opts) {
			out = append(out, &all(&s.opts)[i])
		}
		return out
	}
	return &collection[T]{
		Plural: plural, Singular: singular, Format: format, NotFound: notFound, All: ptrs,
		Items: func(s *Server) map[string]*T {
			return simkit.Index(all(&s.opts), func(v T) string { return id(&v) })
		},
		Visible: func(*Server, *caller, *T) bool { return true },
		Render:  func(_ *Server, r *http.Request, v *T) obj { return rep(r, v) },
	}
}

// where is the objects of m that keep accepts, in creation order: map
// order is random, and lists and first-match choices must be stable.
func where[T any, P hasMeta[T]](m map[string]*T, keep func(P) bool) []P {
	return simkit.Select(m, func(v *T) uint64 { return P(v).meta().seq }, func(v *T) bool { return keep(v) },
		func(v *T) P { return v })
}
