package openstacksim

import (
	"encoding/json"
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// collection is the read side of one resource: its list (the objects the
// caller may see, in creation order, rendered, filtered by the query and
// paged) and its show by id. Neutron's and Keystone's resources serve
// their reads through one, so query filters, markers, next links, error
// bodies and status codes are the same code for all of them.
type collection[T any] struct {
	// plural and singular are the body keys of a list and of one object.
	plural, singular string
	items            func(*state) map[string]*T
	seq              func(*T) uint64
	// visible says whether c may see v, in a list and by id.
	visible func(s *Server, c *caller, v *T) bool
	rep     func(s *Server, r *http.Request, v *T) obj
	// filters take over query parameters a plain field match cannot
	// serve (filterObjs).
	filters map[string]func(obj, []string) bool
	style   pageStyle
	// badRequest is the service's 400 for a bad limit or marker.
	badRequest func(int, string) *apiErr
	notFound   func(id string) *apiErr
	// hidden, when set, answers an id that exists but c may not see
	// (Keystone's 403); without it the object is not found (Neutron's
	// 404, which does not tell another project's ids from unknown ones).
	hidden *apiErr
	// listPolicy, when set, is checked before a list (Keystone lists
	// projects and users to admins only).
	listPolicy func(c *caller) *apiErr
}

// neutronCollection is a Neutron resource: 404 naming noun, Neutron's 400,
// next links in "<plural>_links".
func neutronCollection[T any](plural, singular, noun string, items func(*state) map[string]*T, seq func(*T) uint64,
	visible func(*Server, *caller, *T) bool, rep func(*Server, *T) obj) *collection[T] {
	return &collection[T]{
		plural: plural, singular: singular, items: items, seq: seq, visible: visible,
		rep:   func(s *Server, _ *http.Request, v *T) obj { return rep(s, v) },
		style: linksArray, badRequest: neutronBad,
		notFound: func(id string) *apiErr { return nfound(noun, id) },
	}
}

// owned is the visibility of a resource its project's members and admins
// see.
func owned[T any](project func(*T) string) func(*Server, *caller, *T) bool {
	return func(_ *Server, c *caller, v *T) bool { return c.owns(project(v)) }
}

// find is the object with id, or the error a show answers when c may not
// see it.
func (col *collection[T]) find(s *Server, c *caller, id string) (*T, *apiErr) {
	v := col.items(s.st)[id]
	if v == nil {
		return nil, col.notFound(id)
	}
	if !col.visible(s, c, v) {
		if col.hidden != nil {
			return nil, col.hidden
		}
		return nil, col.notFound(id)
	}
	return v, nil
}

// lookup is the object with id if c may see it, else nil.
func (col *collection[T]) lookup(s *Server, c *caller, id string) *T {
	v, e := col.find(s, c, id)
	if e != nil {
		return nil
	}
	return v
}

func (col *collection[T]) list(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		if col.listPolicy != nil {
			if e := col.listPolicy(c); e != nil {
				return e
			}
		}
		var objs []obj
		for _, v := range simkit.SortedBy(col.items(s.st), col.seq) {
			if col.visible(s, c, v) {
				objs = append(objs, col.rep(s, r, v))
			}
		}
		writeList(w, r, col.plural, filterObjs(r, objs, col.filters), col.style, col.badRequest)
		return nil
	}
}

func (col *collection[T]) get(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		v, e := col.find(s, c, r.PathValue("id"))
		if e != nil {
			return e
		}
		simkit.WriteJSON(w, http.StatusOK, obj{col.singular: col.rep(s, r, v)})
		return nil
	}
}

// crud adds col's list and show under path to api, and its create, update
// and delete as typed functions: the handlers around them decode the
// request's {"<singular>": In} body, find the object by {id} as a show
// does, and answer the rendered object (201 on create, 200 on update) or
// 204 on delete, the same for every Neutron resource.
func crud[T, In any](s *Server, api func(string, handler), path string, col *collection[T],
	create func(*Server, *caller, In) (*T, *apiErr), update func(*Server, *caller, *T, In) *apiErr,
	remove func(*Server, *caller, *T) *apiErr) {
	api("GET "+path, col.list(s))
	api("GET "+path+"/{id}", col.get(s))
	api("POST "+path, func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		in, e := decodeIn[In](r, col.singular)
		if e != nil {
			return e
		}
		v, e := create(s, c, in)
		if e != nil {
			return e
		}
		simkit.WriteJSON(w, http.StatusCreated, obj{col.singular: col.rep(s, r, v)})
		return nil
	})
	api("PUT "+path+"/{id}", func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		v, e := col.find(s, c, r.PathValue("id"))
		if e != nil {
			return e
		}
		in, e := decodeIn[In](r, col.singular)
		if e != nil {
			return e
		}
		if e := update(s, c, v, in); e != nil {
			return e
		}
		simkit.WriteJSON(w, http.StatusOK, obj{col.singular: col.rep(s, r, v)})
		return nil
	})
	api("DELETE "+path+"/{id}", func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		v, e := col.find(s, c, r.PathValue("id"))
		if e != nil {
			return e
		}
		if e := remove(s, c, v); e != nil {
			return e
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

// decodeIn reads the In under key of a {"<key>": In} body; an absent key
// is In's zero value.
func decodeIn[In any](r *http.Request, key string) (In, *apiErr) {
	var env map[string]json.RawMessage
	var in In
	if e := decode(r, &env, badInput); e != nil {
		return in, e
	}
	if raw, ok := env[key]; ok {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, badInput("Malformed request body: " + err.Error())
		}
	}
	return in, nil
}
