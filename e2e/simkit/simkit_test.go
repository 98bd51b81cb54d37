package simkit

import (
	"context"
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

func TestWaitAnsweredReturnsOnceTheMatchingRequestIsLogged(t *testing.T) {
	fs := NewFaults(FaultOptions{})
	entered, release := make(chan struct{}), make(chan struct{})
	h := fs.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/orders/1/done" {
			close(entered) // the state has changed; the answer is not out yet
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/orders/1/done", nil))
	}()
	<-entered
	orderOne := func(p string) bool { return strings.HasPrefix(p, "/orders/1/") }

	// Another path being quiet does not stand for this one.
	if err := fs.WaitAnswered(context.Background(), func(p string) bool { return strings.HasPrefix(p, "/orders/2/") }); err != nil {
		t.Fatalf("WaitAnswered on an idle path: %v", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fs.WaitAnswered(gone, orderOne); err == nil || !strings.Contains(err.Error(), "/orders/1/done") {
		t.Fatalf("WaitAnswered with the request still served: %v, want an error naming its path", err)
	}
	if n := len(fs.Calls()); n != 0 {
		t.Fatalf("call log has %d calls while the request is served, want 0", n)
	}

	close(release)
	if err := fs.WaitAnswered(context.Background(), orderOne); err != nil {
		t.Fatalf("WaitAnswered after the answer: %v", err)
	}
	if calls := fs.Calls(); len(calls) != 1 || calls[0].Path != "/orders/1/done" || calls[0].Status != http.StatusOK {
		t.Errorf("call log %+v, want the one answered call", calls)
	}
	<-served
}
