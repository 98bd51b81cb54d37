package simkit

import (
	"net/http"
	"strconv"
	"strings"
)

// Paging picks the part of a list a request asks for, in one service's
// style (page numbers, offsets, cursors).
type Paging interface {
	// Page returns the bounds [start, end) of the n items r asks for and
	// the headers that tell the client about the rest, or the error to
	// answer (e.g. a page that does not exist).
	Page(r *http.Request, n int) (start, end int, h http.Header, err error)
}

// PageOf answers the page of items r asks for as p cuts it: a JSON array,
// empty rather than null.
func PageOf[T any](r *http.Request, p Paging, items []T) (Reply, error) {
	start, end, h, err := p.Page(r, len(items))
	if err != nil {
		return Reply{}, err
	}
	return Reply{Header: h, Body: append([]T{}, items[start:end]...)}, nil
}

// PageNumbers is ?page=&page_size= paging as Django REST framework's
// LinkHeaderPagination (Waldur's) does it: the body is a bare array, the
// next, previous, first and last pages are only in an RFC 8288 Link header
// (so clients must follow it), the total in CountHeader; page=last is the
// last page and a page out of range is InvalidPage.
type PageNumbers struct {
	DefaultSize, MaxSize int
	CountHeader          string
	InvalidPage          error
}

// Page implements Paging.
func (p PageNumbers) Page(r *http.Request, n int) (start, end int, h http.Header, err error) {
	q := r.URL.Query()
	size := p.DefaultSize
	if v, err := strconv.Atoi(q.Get("page_size")); err == nil && v > 0 {
		size = min(v, p.MaxSize)
	}
	pages := max(1, (n+size-1)/size)
	page := 1
	if v := q.Get("page"); v == "last" {
		page = pages
	} else if v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 || page > pages {
			return 0, 0, nil, p.InvalidPage
		}
	}
	link := func(page int, rel string) string {
		q.Set("page", strconv.Itoa(page))
		return "<" + BaseURL(r) + r.URL.EscapedPath() + "?" + q.Encode() + `>; rel="` + rel + `"`
	}
	var links []string
	if page < pages {
		links = append(links, link(page+1, "next"))
	}
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h = http.Header{}
	h.Set("Link", strings.Join(links, ", "))
	h.Set(p.CountHeader, strconv.Itoa(n))
	h.Set("Access-Control-Expose-Headers", "Link, "+p.CountHeader)
	start = min((page-1)*size, n)
	return start, min(start+size, n), h, nil
}
