package simkit

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// Obj is a rendered resource. Lists filter and page rendered objects, so
// a filter sees what the client sees.
type Obj = map[string]any

// Handler serves one request of caller C; a returned error is written
// with WriteError by whoever registers it.
type Handler[C any] = func(w http.ResponseWriter, r *http.Request, c C) *Error

// ListFormat is how a service filters and pages its lists: what differs
// between services is an option here.
type ListFormat struct {
	// OnePage ignores limit and marker: the whole list is one page.
	OnePage bool
	// Links adds a page's links to body (the list under key); next is the
	// query of the next page, "" on the last.
	Links func(r *http.Request, body Obj, key, next string)
	// BadRequest is the service's 400 for a bad limit or marker.
	BadRequest func(msg string) *Error
	// Params are query parameters that page, sort or shape a list rather
	// than filter it.
	Params []string
	// Filters take over query parameters a plain field match cannot
	// serve, for every list of the service.
	Filters map[string]Filter
}

// Filter says whether o matches the values of one query parameter.
type Filter = func(o Obj, vals []string) bool

// Filtered keeps the objects whose rendered field equals one of the query
// values for every filter parameter; a parameter naming a field the
// objects do not have is ignored (OpenStack's behaviour without strict
// filtering). custom and f.Filters take over a parameter.
func (f *ListFormat) Filtered(r *http.Request, objs []Obj, custom map[string]Filter) []Obj {
	out, q := objs[:0:0], r.URL.Query()
next:
	for _, o := range objs {
		for k, vals := range q {
			if slices.Contains(f.Params, k) {
				continue
			}
			match := custom[k]
			if match == nil {
				match = f.Filters[k]
			}
			if match == nil {
				if v, ok := o[k]; ok {
					match = func(_ Obj, vals []string) bool { return slices.Contains(vals, Scalar(v)) }
				}
			}
			if match != nil && !match(o, vals) {
				continue next
			}
		}
		out = append(out, o)
	}
	return out
}

// Scalar renders a field as it would appear in a query.
func Scalar(v any) string {
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

// WriteList pages objs (already filtered, in order) by limit and marker
// (an object's "id") and answers {key: page} with the page's links.
func (f *ListFormat) WriteList(w http.ResponseWriter, r *http.Request, key string, objs []Obj) {
	page, q, more := objs, r.URL.Query(), false
	if m := q.Get("marker"); m != "" && !f.OnePage {
		i := slices.IndexFunc(objs, func(o Obj) bool { return o["id"] == m })
		if i < 0 {
			WriteError(w, f.BadRequest("marker ["+m+"] not found"))
			return
		}
		page = objs[i+1:]
	}
	if l := q.Get("limit"); l != "" && !f.OnePage {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			WriteError(w, f.BadRequest("Invalid limit "+strconv.Quote(l)))
			return
		}
		if n > 0 && len(page) > n {
			page, more = page[:n], true
		}
	}
	if page == nil {
		page = []Obj{}
	}
	body, next := Obj{key: page}, ""
	if more {
		q.Set("marker", fmt.Sprint(page[len(page)-1]["id"]))
		next = q.Encode()
	}
	if f.Links != nil {
		f.Links(r, body, key, next)
	}
	WriteJSON(w, http.StatusOK, body)
}

// Collection is one resource of a simulated API kept in a map by id: its
// list (what the caller may see, in order, rendered, filtered and paged),
// its show by id, and (CRUD) its create, update and delete. S is the
// simulator, C who calls; error bodies and status codes are options, so
// every simulator keeps its service's wire format.
type Collection[S, C, T any] struct {
	// Plural and Singular are the body keys of a list and of one object;
	// without Singular a show answers the object bare.
	Plural, Singular string
	Items            func(S) map[string]*T
	// Order sorts lists (e.g. a creation sequence): map order is random.
	Order func(*T) uint64
	// All, when set, is every object in list order instead of Items
	// sorted by Order (objects kept in a slice).
	All func(S) []*T
	// Owner is the owning project or account of an object, for CountOwned.
	Owner func(*T) string
	// Visible says whether c may see v, in a list and by id.
	Visible func(s S, c C, v *T) bool
	Render  func(s S, r *http.Request, v *T) Obj
	Format  *ListFormat
	// Filters take over query parameters of this resource's lists.
	Filters map[string]Filter
	// NotFound is the service's 404 for id.
	NotFound func(id string) *Error
	// Hidden, when set, answers an id that exists but c may not see (e.g.
	// a 403); without it the object is not found, which does not tell
	// another owner's ids from unknown ones.
	Hidden *Error
	// ListPolicy, when set, is checked before a list.
	ListPolicy func(c C) *Error
	// Listed, when set, narrows a list further than Visible (e.g. to the
	// caller's own objects unless it asks for every owner's).
	Listed func(s S, c C, r *http.Request, v *T) bool
	// NewestFirst reverses the list order.
	NewestFirst bool
	// Read runs on each object a list or show is about to render (e.g. a
	// GET that counts towards a status change).
	Read func(s S, v *T)
	// Brief, when set, shapes each list entry after filtering (e.g. a
	// list without /detail).
	Brief func(r *http.Request, o Obj) Obj
	// Allow, when set, is checked before a create, update or delete (verb
	// "create", "update", "delete"), before the object is looked up.
	Allow func(c C, verb string) *Error
	// BadBody is the service's 400 for an unreadable request body.
	BadBody func(msg string) *Error
	// UpdateMethod is the update's HTTP method (default PUT);
	// CreateStatus and DeleteStatus default to 201 and 204.
	UpdateMethod               string
	CreateStatus, DeleteStatus int
}

// Find is the object with id, or the error a show answers when c may not
// see it.
func (col *Collection[S, C, T]) Find(s S, c C, id string) (*T, *Error) {
	v := col.Items(s)[id]
	switch {
	case v == nil:
		return nil, col.NotFound(id)
	case col.Visible(s, c, v):
		return v, nil
	case col.Hidden != nil:
		return nil, col.Hidden
	}
	return nil, col.NotFound(id)
}

// Lookup is the object with id if c may see it, else nil.
func (col *Collection[S, C, T]) Lookup(s S, c C, id string) *T {
	v, _ := col.Find(s, c, id)
	return v
}

// Sorted is every object in list order.
func (col *Collection[S, C, T]) Sorted(s S) []*T {
	if col.All != nil {
		return col.All(s)
	}
	return SortedBy(col.Items(s), col.Order)
}

// CountOwned counts owner's objects, e.g. for a quota.
func (col *Collection[S, C, T]) CountOwned(s S, owner string) int {
	n := 0
	for _, v := range col.Items(s) {
		if col.Owner(v) == owner {
			n++
		}
	}
	return n
}

// List serves the list.
func (col *Collection[S, C, T]) List(s S) Handler[C] {
	return func(w http.ResponseWriter, r *http.Request, c C) *Error {
		if col.ListPolicy != nil {
			if e := col.ListPolicy(c); e != nil {
				return e
			}
		}
		var objs []Obj
		for _, v := range col.Sorted(s) {
			if col.Visible(s, c, v) && (col.Listed == nil || col.Listed(s, c, r, v)) {
				objs = append(objs, col.render(s, r, v))
			}
		}
		if col.NewestFirst {
			slices.Reverse(objs)
		}
		objs = col.Format.Filtered(r, objs, col.Filters)
		if col.Brief != nil {
			for i, o := range objs {
				objs[i] = col.Brief(r, o)
			}
		}
		col.Format.WriteList(w, r, col.Plural, objs)
		return nil
	}
}

func (col *Collection[S, C, T]) render(s S, r *http.Request, v *T) Obj {
	if col.Read != nil {
		col.Read(s, v)
	}
	return col.Render(s, r, v)
}

// Get serves the show of {id}.
func (col *Collection[S, C, T]) Get(s S) Handler[C] {
	return col.On(s, func(w http.ResponseWriter, r *http.Request, _ C, v *T) *Error {
		o := col.render(s, r, v)
		if col.Singular != "" {
			o = Obj{col.Singular: o}
		}
		WriteJSON(w, http.StatusOK, o)
		return nil
	})
}

// On serves a route on the object {id} as a show finds it.
func (col *Collection[S, C, T]) On(s S, h func(w http.ResponseWriter, r *http.Request, c C, v *T) *Error) Handler[C] {
	return func(w http.ResponseWriter, r *http.Request, c C) *Error {
		v, e := col.Find(s, c, r.PathValue("id"))
		if e != nil {
			return e
		}
		return h(w, r, c, v)
	}
}

// CRUD adds col's list and show under path to add, and its create, update
// and delete as typed functions (a nil one is not served): the handlers
// around them check Allow, decode the request's {"<Singular>": In} body,
// find the object by {id} as a show does, and answer the rendered object
// (CreateStatus, or 200 on update) or DeleteStatus with no body.
func CRUD[S, C, T, In any](s S, add func(pattern string, h Handler[C]), path string, col *Collection[S, C, T],
	create func(s S, c C, in In) (*T, *Error), update func(s S, c C, v *T, in In) *Error, remove func(s S, c C, v *T) *Error) {
	add("GET "+path, col.List(s))
	add("GET "+path+"/{id}", col.Get(s))
	// allowed checks Allow for verb before h.
	allowed := func(verb string, h Handler[C]) Handler[C] {
		return func(w http.ResponseWriter, r *http.Request, c C) *Error {
			if col.Allow != nil {
				if e := col.Allow(c, verb); e != nil {
					return e
				}
			}
			return h(w, r, c)
		}
	}
	if create != nil {
		add("POST "+path, allowed("create", func(w http.ResponseWriter, r *http.Request, c C) *Error {
			in, e := DecodeIn[In](r, col.Singular, col.BadBody)
			if e != nil {
				return e
			}
			v, e := create(s, c, in)
			if e != nil {
				return e
			}
			WriteJSON(w, cmp.Or(col.CreateStatus, http.StatusCreated), Obj{col.Singular: col.Render(s, r, v)})
			return nil
		}))
	}
	if update != nil {
		add(cmp.Or(col.UpdateMethod, "PUT")+" "+path+"/{id}", allowed("update", col.On(s, func(w http.ResponseWriter, r *http.Request, c C, v *T) *Error {
			in, e := DecodeIn[In](r, col.Singular, col.BadBody)
			if e != nil {
				return e
			}
			if e := update(s, c, v, in); e != nil {
				return e
			}
			WriteJSON(w, http.StatusOK, Obj{col.Singular: col.Render(s, r, v)})
			return nil
		})))
	}
	if remove != nil {
		add("DELETE "+path+"/{id}", allowed("delete", col.On(s, func(w http.ResponseWriter, _ *http.Request, c C, v *T) *Error {
			if e := remove(s, c, v); e != nil {
				return e
			}
			w.WriteHeader(cmp.Or(col.DeleteStatus, http.StatusNoContent))
			return nil
		})))
	}
}
