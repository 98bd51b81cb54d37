package waldursim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Waldur's REST_FRAMEWORK settings: LinkHeaderPagination, PAGE_SIZE 10,
// page_size up to 300. Lists are bare JSON arrays; the next page is only
// discoverable through the Link header, so clients must follow it.
const (
	defaultPageSize = 10
	maxPageSize     = 300
)

func writeList(w http.ResponseWriter, r *http.Request, items []map[string]any) {
	q := r.URL.Query()
	size := defaultPageSize
	if v, err := strconv.Atoi(q.Get("page_size")); err == nil && v > 0 {
		size = min(v, maxPageSize)
	}
	pages := max(1, (len(items)+size-1)/size)
	page := 1
	if p := q.Get("page"); p != "" {
		if p == "last" {
			page = pages
		} else if v, err := strconv.Atoi(p); err == nil && v >= 1 && v <= pages {
			page = v
		} else {
			writeErr(w, errInvalidPage)
			return
		}
	}
	start := min((page-1)*size, len(items))
	end := min(start+size, len(items))
	out := make([]map[string]any, 0, end-start)
	for _, it := range items[start:end] {
		out = append(out, restrictFields(r, it))
	}

	link := func(p int) string {
		u := absURL(r)
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		u.RawQuery = qq.Encode()
		return u.String()
	}
	var parts []string
	if page < pages {
		parts = append(parts, "<"+link(page+1)+`>; rel="next"`)
	}
	if page > 1 {
		parts = append(parts, "<"+link(page-1)+`>; rel="prev"`)
	}
	parts = append(parts, "<"+link(1)+`>; rel="first"`, "<"+link(pages)+`>; rel="last"`)
	w.Header().Set("Link", strings.Join(parts, ", "))
	w.Header().Set("X-Result-Count", strconv.Itoa(len(items)))
	w.Header().Set("Access-Control-Expose-Headers", "Link, X-Result-Count")
	simkit.WriteJSON(w, http.StatusOK, out)
}

var errInvalidPage = detail(http.StatusNotFound, "Invalid page.")

// absURL is the request URL as the client addressed it (DRF's
// build_absolute_uri).
func absURL(r *http.Request) *url.URL {
	u := *r.URL
	u.Scheme = "http"
	if r.TLS != nil {
		u.Scheme = "https"
	}
	u.Host = r.Host
	return &u
}

// baseURL is scheme://host of the request, for the url fields of objects.
func baseURL(r *http.Request) string {
	u := absURL(r)
	return u.Scheme + "://" + u.Host
}
