package waldur

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// pagedHandler serves pages of {"uuid": "..."} objects and links page n to
// n+1 with link(n+1, r).
func pagedHandler(pages [][]string, link func(next int, r *http.Request) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page := 1
		if p := r.URL.Query().Get("page"); p != "" {
			fmt.Sscan(p, &page)
		}
		if page < 1 || page > len(pages) {
			writeJSON(w, 404, `{"detail":"Invalid page."}`)
			return
		}
		if page < len(pages) {
			w.Header().Add("Link", link(page+1, r))
		}
		var items []string
		for _, id := range pages[page-1] {
			items = append(items, fmt.Sprintf(`{"uuid":%q,"state":"executing","type":"Create"}`, id))
		}
		writeJSON(w, 200, "["+strings.Join(items, ",")+"]")
	}
}

func TestPagination(t *testing.T) {
	pages := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}
	tests := map[string]struct {
		link func(next int, r *http.Request) string
	}{
		"absolute next link": {link: func(n int, r *http.Request) string {
			u := *r.URL
			u.Scheme, u.Host = "http", r.Host
			q := u.Query()
			q.Set("page", fmt.Sprint(n))
			u.RawQuery = q.Encode()
			return fmt.Sprintf(`<%s>; rel="next"`, u.String())
		}},
		"next among first prev last": {link: func(n int, r *http.Request) string {
			q := r.URL.Query()
			q.Set("page", fmt.Sprint(n))
			return fmt.Sprintf(`<http://%s%s?page=1>; rel="first", <http://%s%s?%s>; rel="next", <http://%s%s?page=3>; rel="last"`,
				r.Host, r.URL.Path, r.Host, r.URL.Path, q.Encode(), r.Host, r.URL.Path)
		}},
		"relative next link": {link: func(n int, r *http.Request) string {
			q := r.URL.Query()
			q.Set("page", fmt.Sprint(n))
			return fmt.Sprintf(`<%s?%s>; rel=next`, r.URL.Path, q.Encode())
		}},
		"foreign host is replaced by the configured host": {link: func(n int, r *http.Request) string {
			q := r.URL.Query()
			q.Set("page", fmt.Sprint(n))
			return fmt.Sprintf(`<https://evil.example%s?%s>; rel="next"`, r.URL.Path, q.Encode())
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newRecorder(t, pagedHandler(pages, tc.link))
			c := newTestClient(t, srv.URL)
			got, err := c.ListOrders(context.Background(), OrderFilter{
				OfferingUUID: "off-1",
				States:       []string{OrderStatePendingProvider, OrderStateExecuting},
			})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, o := range got {
				ids = append(ids, o.UUID)
			}
			if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(ids, want) {
				t.Errorf("uuids = %v, want %v", ids, want)
			}
			reqs := srv.requests()
			if len(reqs) != 3 {
				t.Fatalf("requests = %d, want 3", len(reqs))
			}
			for i, r := range reqs {
				if r.Path != "/api/marketplace-orders/" {
					t.Errorf("page %d path = %q", i+1, r.Path)
				}
				if r.Query.Get("page_size") != "100" || r.Query.Get("offering_uuid") != "off-1" ||
					!slices.Equal(r.Query["state"], []string{"pending-provider", "executing"}) {
					t.Errorf("page %d query = %v", i+1, r.Query)
				}
				if r.Header.Get("Authorization") != "Token "+testToken {
					t.Errorf("page %d lost the Authorization header", i+1)
				}
			}
		})
	}
}

func TestPaginationLoopIsDetected(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.Path, r.URL.RawQuery))
		writeJSON(w, 200, `[]`)
	})
	c := newTestClient(t, srv.URL)
	if _, err := c.ListOrders(context.Background(), OrderFilter{}); err == nil || !strings.Contains(err.Error(), "loops") {
		t.Fatalf("err = %v, want loop error", err)
	}
}

func TestPaginationErrorOnLaterPage(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			writeJSON(w, 403, `{"detail":"forbidden"}`)
			return
		}
		w.Header().Set("Link", `</api/marketplace-orders/?page=2>; rel="next"`)
		writeJSON(w, 200, `[{"uuid":"a"}]`)
	})
	c := newTestClient(t, srv.URL)
	got, err := c.ListOrders(context.Background(), OrderFilter{})
	if StatusCode(err) != 403 || got != nil {
		t.Fatalf("got %v, %v; want nil, 403", got, err)
	}
}

func TestNextLink(t *testing.T) {
	tests := map[string]struct {
		values []string
		want   string
	}{
		"none":                 {},
		"only prev":            {values: []string{`<http://x/?page=1>; rel="prev"`}},
		"next":                 {values: []string{`<http://x/?page=2>; rel="next"`}, want: "http://x/?page=2"},
		"unquoted rel":         {values: []string{`<http://x/?page=2>; rel=next`}, want: "http://x/?page=2"},
		"upper case":           {values: []string{`<http://x/?page=2>; REL="NEXT"`}, want: "http://x/?page=2"},
		"multi-valued rel":     {values: []string{`<http://x/?page=9>; rel="next last"`}, want: "http://x/?page=9"},
		"comma in url":         {values: []string{`<http://x/?a=1,2>; rel="prev", <http://x/?b=3,4>; rel="next"`}, want: "http://x/?b=3,4"},
		"separate headers":     {values: []string{`<http://x/?page=1>; rel="prev"`, `<http://x/?page=3>; rel="next"`}, want: "http://x/?page=3"},
		"params before rel":    {values: []string{`<http://x/?page=3>; title="p3"; rel="next"`}, want: "http://x/?page=3"},
		"malformed is ignored": {values: []string{`http://x/?page=3; rel="next"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Link", v)
			}
			if got := nextLink(h); got != tc.want {
				t.Errorf("nextLink = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestListDoesNotMutateCallerQuery(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `[]`) })
	c := newTestClient(t, srv.URL)
	q := url.Values{"state": {"OK"}}
	if _, err := list[Resource](context.Background(), c, "/api/marketplace-provider-resources/", q); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q, url.Values{"state": {"OK"}}) {
		t.Errorf("caller's query changed to %v", q)
	}
}
