package openstacksim

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// tagsOf resolves {res}/{id} of Neutron's tag API to the tags of a resource
// c may see.
func (s *Server) tagsOf(r *http.Request, c *caller) (*[]string, *apiErr) {
	id := r.PathValue("id")
	var tags *[]string
	kind := ""
	switch r.PathValue("res") {
	case "networks":
		kind = "network"
		if n := s.visibleNetwork(c, id); n != nil && c.owns(n.ProjectID) {
			tags = &n.Tags
		}
	case "subnets":
		kind = "subnet"
		if sub := s.visibleSubnet(c, id); sub != nil && c.owns(sub.ProjectID) {
			tags = &sub.Tags
		}
	case "ports":
		kind = "port"
		if p := s.visiblePort(c, id); p != nil {
			tags = &p.Tags
		}
	case "routers":
		kind = "router"
		if rt := s.visibleRouter(c, id); rt != nil {
			tags = &rt.Tags
		}
	case "security-groups":
		kind = "security group"
		if g := s.visibleSG(c, id); g != nil {
			tags = &g.Tags
		}
	case "floatingips":
		kind = "floating IP"
		if f := s.visibleFIP(c, id); f != nil {
			tags = &f.Tags
		}
	default:
		return nil, notFoundFor(r.URL.Path)
	}
	if tags == nil {
		return nil, nfound(kind, id)
	}
	return tags, nil
}

// tagged serves a route of Neutron's tag API on the tags tagsOf resolves.
func (s *Server) tagged(h func(w http.ResponseWriter, r *http.Request, tags *[]string) *apiErr) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		tags, e := s.tagsOf(r, c)
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
	if e := decode(r, &in, badInput); e != nil {
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

var tagKeys = []string{"tags", "tags-any", "not-tags", "not-tags-any"}
