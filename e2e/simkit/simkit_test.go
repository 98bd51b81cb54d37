package simkit

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestSelectKeepsOrderAndIsNilWhenNothingMatches(t *testing.T) {
	m := map[string]int{"c": 3, "a": 1, "b": 2, "d": 4}
	even := Select(m, func(v int) int { return v }, func(v int) bool { return v%2 == 0 }, func(v int) int { return v * 10 })
	if !slices.Equal(even, []int{20, 40}) {
		t.Errorf("Select = %v, want [20 40]", even)
	}
	if none := Select(m, func(v int) int { return v }, func(int) bool { return false }, func(v int) int { return v }); none != nil {
		t.Errorf("Select of nothing = %#v, want nil", none)
	}
}

func TestBadBodyAnswersAMalformedBodyInTheServicesFormat(t *testing.T) {
	type in struct {
		Name string `json:"name"`
	}
	h := Handle(BadBody(func(w http.ResponseWriter, msg string) { WriteError(w, &Error{Status: 422, Body: "bad: " + msg}) }),
		func(_ *http.Request, v in) (string, error) { return v.Name, nil })
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"a typed body reaches the handler", `{"name":"x"}`, 200, `"x"`},
		{"a malformed body is the service's error", `{`, 422, "bad: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h(rec, httptest.NewRequest("POST", "/", strings.NewReader(tc.body)))
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.want {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.status, tc.want)
			}
		})
	}
}

func TestAFaultAnswersItsCountThenPassesThrough(t *testing.T) {
	fs := NewFaults(FaultOptions{ErrorBody: func(status int) string { return `{"error":"injected"}` },
		Label: func(r *http.Request) string { return r.UserAgent() }})
	fs.AddFault(Fault{Method: "GET", PathPrefix: "/x", Status: 503, Count: 1})
	h := fs.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	var got []int
	for range 2 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/x/1", nil)
		req.Header.Set("User-Agent", "agent")
		h.ServeHTTP(rec, req)
		got = append(got, rec.Code)
	}
	if !slices.Equal(got, []int{503, 200}) {
		t.Errorf("statuses %v, want [503 200]", got)
	}
	calls := fs.Calls()
	if len(calls) != 2 || !calls[0].Faulted || calls[1].Faulted || calls[0].Label != "agent" {
		t.Errorf("call log %+v, want the first faulted, both labelled agent", calls)
	}
}
