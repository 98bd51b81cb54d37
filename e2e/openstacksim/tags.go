package openstacksim

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// taggable is, by the {res} of Neutron's tag API, how an {id} resolves to
// the tags of a resource: one c may see and owns (a shared network's tags
// are its owner's), else the resource's 404.
var taggable = map[string]func(*Server, *caller, string) (*[]string, *apiErr){
	"networks":        tagsIn(networks),
	"subnets":         tagsIn(subnets),
	"ports":           tagsIn(ports),
	"routers":         tagsIn(routers),
	"security-groups": tagsIn(secGroups),
	"floatingips":     tagsIn(floatingIPs),
}

func tagsIn[T any, P hasMeta[T]](col *collection[T]) func(*Server, *caller, string) (*[]string, *apiErr) {
	return func(s *Server, c *caller, id string) (*[]string, *apiErr) {
		v, e := col.Find(s, c, id)
		if e != nil {
			return nil, e
		}
		if m := P(v).meta(); c.owns(m.ProjectID) {
			return &m.Tags, nil
		}
		return nil, col.NotFound(id)
	}
}

// tagged serves a route of Neutron's tag API on the tags taggable resolves.
func (s *Server) tagged(h func(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		of := taggable[r.PathValue("res")]
		if of == nil {
			return notFoundFor(r.URL.Path)
		}
		tags, e := of(s, c, r.PathValue("id"))
		if e != nil {
			return e
		}
		return h(w, r, tags)
	}
}

func (s *Server) listTags(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	simkit.WriteJSON(w, http.StatusOK, obj{"tags": append([]string{}, *tags...)})
	return nil
}

func (s *Server) replaceTags(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	var in struct {
		Tags []string `json:"tags"`
	}
	if e := simkit.Decode(r, &in, badInput); e != nil {
		return e
	}
	*tags = uniqueTags(in.Tags)
	simkit.WriteJSON(w, http.StatusOK, obj{"tags": append([]string{}, *tags...)})
	return nil
}

func (s *Server) deleteAllTags(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	*tags = nil
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) addTag(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	*tags = uniqueTags(append(*tags, r.PathValue("tag")))
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (s *Server) confirmTag(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	if !slices.Contains(*tags, r.PathValue("tag")) {
		return neutronErr(http.StatusNotFound, "TagNotFound", "Tag "+r.PathValue("tag")+" could not be found.")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteTag(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr {
	i := slices.Index(*tags, r.PathValue("tag"))
	if i < 0 {
		return neutronErr(http.StatusNotFound, "TagNotFound", "Tag "+r.PathValue("tag")+" could not be found.")
	}
	*tags = slices.Delete(*tags, i, i+1)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tagFilter applies Neutron's and Keystone's tag filters, each a
// comma-separated list: tags (all present), tags-any (one present),
// not-tags (not all present), not-tags-any (none present).
func tagFilter(key string, have []string, val string) bool {
	want := strings.Split(val, ",")
	n := 0
	for _, t := range want {
		if slices.Contains(have, t) {
			n++
		}
	}
	switch key {
	case "tags":
		return n == len(want)
	case "tags-any":
		return n > 0
	case "not-tags":
		return n < len(want)
	default: // not-tags-any
		return n == 0
	}
}

// tagFilters are the tag filters as list filters, for every list.
var tagFilters = func() map[string]simkit.Filter {
	m := map[string]simkit.Filter{}
	for _, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		m[k] = func(o obj, vals []string) bool {
			tags, _ := o["tags"].([]string)
			for _, v := range vals {
				if !tagFilter(k, tags, v) {
					return false
				}
			}
			return true
		}
	}
	return m
}()
