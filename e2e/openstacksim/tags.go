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
	"networks":        tagsIn(networks, func(n *Network) (*[]string, string) { return &n.Tags, n.ProjectID }),
	"subnets":         tagsIn(subnets, func(sub *Subnet) (*[]string, string) { return &sub.Tags, sub.ProjectID }),
	"ports":           tagsIn(ports, func(p *Port) (*[]string, string) { return &p.Tags, p.ProjectID }),
	"routers":         tagsIn(routers, func(rt *Router) (*[]string, string) { return &rt.Tags, rt.ProjectID }),
	"security-groups": tagsIn(secGroups, func(g *SecurityGroup) (*[]string, string) { return &g.Tags, g.ProjectID }),
	"floatingips":     tagsIn(floatingIPs, func(f *FloatingIP) (*[]string, string) { return &f.Tags, f.ProjectID }),
}

func tagsIn[T any](col *collection[T], tags func(*T) (*[]string, string)) func(*Server, *caller, string) (*[]string, *apiErr) {
	return func(s *Server, c *caller, id string) (*[]string, *apiErr) {
		v, e := col.find(s, c, id)
		if e != nil {
			return nil, e
		}
		t, project := tags(v)
		if !c.owns(project) {
			return nil, col.notFound(id)
		}
		return t, nil
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
