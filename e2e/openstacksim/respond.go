package openstacksim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiErr is an error answer with its body already in the service's format.
type apiErr = simkit.Error

// keystoneErr is Keystone's {"error":{"code","message","title"}}.
func keystoneErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Body: map[string]any{"error": map[string]any{
		"code": status, "message": msg, "title": http.StatusText(status)}}}
}

// novaErr is Nova's and Cinder's {"<kind>":{"code","message"}}.
func novaErr(status int, msg string) *apiErr {
	kind := map[int]string{
		400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest",
		413: "overLimit",
	}[status]
	kind = cmp.Or(kind, "computeFault")
	inner := map[string]any{"code": status, "message": msg}
	if status == http.StatusRequestEntityTooLarge {
		inner["retryAfter"] = "0"
	}
	return &apiErr{Status: status, Body: map[string]any{kind: inner}}
}

// neutronErr is Neutron's {"NeutronError":{"type","message","detail"}}.
func neutronErr(status int, typ, msg string) *apiErr {
	return &apiErr{Status: status, Body: map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": msg, "detail": ""}}}
}

// glanceErr is Glance's plain text error page.
func glanceErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Body: fmt.Sprintf("%d %s\n\n%s\n\n   ", status, http.StatusText(status), msg)}
}

// errUnauthorized is keystonemiddleware's answer to a missing, unknown or
// expired token, the same in front of every service.
var errUnauthorized = keystoneErr(http.StatusUnauthorized, "The request you have made requires authentication.")

// decode reads a JSON body into v; mk builds the service's 400.
func decode(r *http.Request, v any, mk func(string) *apiErr) *apiErr {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return mk("Malformed request body: " + err.Error())
	}
	return nil
}

// obj is a rendered resource; lists filter and page rendered objects so the
// filters see what the client sees.
type obj = map[string]any

// pageStyle says how a service links to the next page.
type pageStyle int

const (
	// linksArray: "<key>_links":[{"rel":"next","href":…}] (Nova, Neutron, Cinder).
	linksArray pageStyle = iota
	// glanceNext: "next":"/v2/images?…" relative to the service root.
	glanceNext
	// keystoneLinks: "links":{"self","next":null,"previous":null}, one page.
	keystoneLinks
)

// listParams are query parameters that page, sort or shape a list rather
// than filter it.
var listParams = map[string]bool{
	"limit": true, "marker": true, "sort_key": true, "sort_dir": true, "fields": true, "page_reverse": true,
	"all_tenants": true, "all_projects": true, "with_count": true,
}

// filterObjs keeps the objects whose rendered field equals one of the query
// values for every filter parameter; parameters naming fields the resource
// does not have are ignored, as Neutron does without strict filtering.
// custom takes over a field (e.g. Nova's regex name filter).
func filterObjs(r *http.Request, objs []obj, custom map[string]func(obj, []string) bool) []obj {
	q := r.URL.Query()
	out := objs[:0:0]
next:
	for _, o := range objs {
		for k, vals := range q {
			if listParams[k] {
				continue
			}
			if slices.Contains(tagKeys, k) {
				tags, _ := o["tags"].([]string)
				for _, v := range vals {
					if !tagFilter(k, tags, v) {
						continue next
					}
				}
				continue
			}
			if f := custom[k]; f != nil {
				if !f(o, vals) {
					continue next
				}
				continue
			}
			v, ok := o[k]
			if !ok {
				continue
			}
			if !slices.Contains(vals, scalar(v)) {
				continue next
			}
		}
		out = append(out, o)
	}
	return out
}

// scalar renders a field as it would appear in a query.
func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	default:
		return fmt.Sprint(t)
	}
}

// writeList pages objs (already filtered, in creation order) by limit and
// marker and writes {key: page} plus the next link in style.
func writeList(w http.ResponseWriter, r *http.Request, key string, objs []obj, style pageStyle, errf func(int, string) *apiErr) {
	page := objs
	q := r.URL.Query()
	more := false
	if m := q.Get("marker"); m != "" && style != keystoneLinks {
		i := slices.IndexFunc(objs, func(o obj) bool { return o["id"] == m })
		if i < 0 {
			simkit.WriteError(w, errf(http.StatusBadRequest, "marker ["+m+"] not found"))
			return
		}
		page = objs[i+1:]
	}
	if l := q.Get("limit"); l != "" && style != keystoneLinks {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			simkit.WriteError(w, errf(http.StatusBadRequest, "Invalid limit "+strconv.Quote(l)))
			return
		}
		if n > 0 && len(page) > n {
			page, more = page[:n], true
		}
	}
	if page == nil {
		page = []obj{}
	}
	body := obj{key: page}
	nextQuery := func() string {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("marker", fmt.Sprint(page[len(page)-1]["id"]))
		return nq.Encode()
	}
	switch style {
	case linksArray:
		if more {
			lk := key + "_links"
			if key == "volume_types" {
				lk = "volume_type_links" // gophercloud reads Cinder's singular key
			}
			body[lk] = []obj{{"rel": "next",
				"href": simkit.BaseURL(r) + r.URL.Path + "?" + nextQuery()}}
		}
	case glanceNext:
		body["first"] = "/v2/images"
		body["schema"] = "/v2/schemas/images"
		if more {
			body["next"] = "/v2/images?" + nextQuery()
		}
	case keystoneLinks:
		self := simkit.BaseURL(r) + r.URL.Path
		if r.URL.RawQuery != "" {
			self += "?" + r.URL.RawQuery
		}
		body["links"] = obj{"self": self, "next": nil, "previous": nil}
	}
	simkit.WriteJSON(w, http.StatusOK, body)
}

// Time formats of the services' JSON.
const (
	isoZ     = "2006-01-02T15:04:05Z"       // Nova, Neutron, Keystone, Glance
	isoMicro = "2006-01-02T15:04:05.000000" // Cinder, Nova's launched_at
)

func fmtTime(t time.Time) string  { return t.UTC().Format(isoZ) }
func fmtMicro(t time.Time) string { return t.UTC().Format(isoMicro) }
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
