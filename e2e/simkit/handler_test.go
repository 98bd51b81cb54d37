package simkit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandleWritesRepliesBodiesAndErrorsInTheServicesFormat(t *testing.T) {
	type in struct {
		Name string `json:"name"`
	}
	hs := Handlers{
		WriteError: func(w http.ResponseWriter, err error) {
			WriteJSON(w, http.StatusTeapot, map[string]string{"oops": err.Error()})
		},
		Render: func(r *http.Request, body any) any { return map[string]any{"data": body} },
	}
	h := Handle(hs, func(_ *http.Request, v in) (any, error) {
		switch v.Name {
		case "fail":
			return nil, errors.New("no")
		case "created":
			return Reply{Status: http.StatusCreated, Header: http.Header{"X-A": {"b"}}, Body: v.Name}, nil
		case "empty":
			return Reply{Status: http.StatusNoContent}, nil
		}
		return v.Name, nil
	})
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"a plain Out is a rendered 200", `{"name":"x"}`, 200, `{"data":"x"}`},
		{"a Reply sets status and headers", `{"name":"created"}`, 201, `{"data":"created"}`},
		{"a Reply without a body sends none", `{"name":"empty"}`, 204, ``},
		{"an error is written by WriteError", `{"name":"fail"}`, 418, `{"oops":"no"}`},
		{"a malformed body is an error too", `{`, 418, `{"oops":"HTTP 400: unexpected EOF"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h(rec, httptest.NewRequest("POST", "/", strings.NewReader(tc.body)))
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.want {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.status, tc.want)
			}
			if tc.status == 201 && rec.Header().Get("X-A") != "b" {
				t.Errorf("header X-A = %q, want b", rec.Header().Get("X-A"))
			}
		})
	}
}

func TestPageNumbersCutsPagesAndLinksTheRest(t *testing.T) {
	p := PageNumbers{DefaultSize: 2, MaxSize: 3, CountHeader: "X-Count", InvalidPage: &Error{Status: 404, Body: "bad page"}}
	items := []int{1, 2, 3, 4, 5}
	for _, tc := range []struct {
		name, query string
		want        []int
		links       []string
	}{
		{"the first page by default", "", []int{1, 2}, []string{`page=2>; rel="next"`, `page=1>; rel="first"`, `page=3>; rel="last"`}},
		{"page=last is the last page", "?page=last", []int{5}, []string{`page=2>; rel="prev"`}},
		{"page_size is capped at MaxSize", "?page_size=10&page=2", []int{4, 5}, []string{`rel="prev"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := PageOf(httptest.NewRequest("GET", "/list"+tc.query, nil), p, items)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Body.([]int)
			if len(got) != len(tc.want) || got[0] != tc.want[0] || rep.Header.Get("X-Count") != "5" {
				t.Errorf("page %v count %q, want %v of 5", got, rep.Header.Get("X-Count"), tc.want)
			}
			for _, l := range tc.links {
				if !strings.Contains(rep.Header.Get("Link"), l) {
					t.Errorf("Link %q lacks %q", rep.Header.Get("Link"), l)
				}
			}
		})
	}
	if _, err := PageOf(httptest.NewRequest("GET", "/list?page=9", nil), p, items); err != p.InvalidPage {
		t.Errorf("page out of range: err %v, want InvalidPage", err)
	}
	if rep, _ := PageOf(httptest.NewRequest("GET", "/list", nil), p, []int(nil)); rep.Body.([]int) == nil {
		t.Error("an empty page is nil, want an empty array")
	}
}
