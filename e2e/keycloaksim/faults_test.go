package keycloaksim_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
)

func TestFaults(t *testing.T) {
	ctx := context.Background()
	const groups = "/admin/realms/waldur/groups"
	listGroups := func(e *env) error {
		_, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{})
		return err
	}
	runScenarios(t, newEnv, []scenario[*env]{
		{"a counted fault fails the next N matching calls only", func(t *testing.T, e *env) {
			e.sim.AddFault(keycloaksim.Fault{Method: "GET", PathPrefix: groups, Status: 500, Count: 2})
			apiErr(t, listGroups(e), 500, "500")
			_, err := e.gc.GetRealm(ctx, e.token, "waldur") // does not match
			must(t, err)
			apiErr(t, listGroups(e), 500, "500")
			must(t, listGroups(e))
			eq(t, "faulted calls", e.sim.CallCount("GET", groups, 500), 2)
		}},
		{"an uncounted fault lasts until cleared", func(t *testing.T, e *env) {
			e.sim.AddFault(keycloaksim.Fault{PathPrefix: "/admin/", Status: 429, Body: `{"error":"too many"}`})
			for range 3 {
				apiErr(t, listGroups(e), 429, "too many")
			}
			e.sim.ClearFaults()
			must(t, listGroups(e))
		}},
		{"a hang outlasts a client timeout", func(t *testing.T, e *env) {
			// A minute's hang against a 100ms client timeout: the bound sits
			// far from both.
			e.sim.AddFault(keycloaksim.Fault{PathPrefix: groups, Delay: time.Minute, Count: 1})
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := e.gc.GetGroups(short, e.token, "waldur", gocloak.GetGroupsParams{})
			if err == nil || time.Since(start) > 30*time.Second {
				t.Fatalf("err %v after %v", err, time.Since(start))
			}
			must(t, listGroups(e))
		}},
		{"a delay with no status passes through late", func(t *testing.T, e *env) {
			e.sim.AddFault(keycloaksim.Fault{PathPrefix: groups, Delay: 50 * time.Millisecond, Count: 1})
			start := time.Now()
			must(t, listGroups(e))
			if time.Since(start) < 50*time.Millisecond {
				t.Fatal("not delayed")
			}
		}},
		{"a dropped connection is a transport error", func(t *testing.T, e *env) {
			e.sim.AddFault(keycloaksim.Fault{PathPrefix: groups, Drop: true})
			err := listGroups(e)
			var ae *gocloak.APIError
			if !errors.As(err, &ae) || ae.Code != 0 {
				t.Fatalf("want a transport error, got %v", err)
			}
			e.sim.ClearFaults()
			must(t, listGroups(e))
		}},
		{"down answers 503 everywhere, token endpoint included, until up", func(t *testing.T, e *env) {
			e.sim.Down(true)
			apiErr(t, listGroups(e), 503, "503")
			_, err := e.gc.LoginAdmin(ctx, "admin", "admin", "master")
			apiErr(t, err, 503, "503")
			e.sim.Down(false)
			must(t, listGroups(e))
		}},
		{"the call log records every request without bodies", func(t *testing.T, e *env) {
			e.sim.ResetCalls()
			must(t, listGroups(e))
			_, _ = e.gc.GetGroup(ctx, e.token, "waldur", "missing")
			calls := e.sim.Calls()
			if len(calls) != 2 || calls[0].Path != groups || calls[0].Status != 200 || calls[1].Status != 404 {
				t.Fatalf("calls %+v", calls)
			}
			eq(t, "count of all GETs", e.sim.CallCount("GET", "", 0), 2)
		}},
		{"the admin API injects faults from another process, outside the call log", func(t *testing.T, e *env) {
			admin := func(method, path, body string) int {
				req, err := http.NewRequestWithContext(ctx, method, e.sim.URL()+path, strings.NewReader(body))
				must(t, err)
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			e.sim.ResetCalls()
			eq(t, "add fault", admin("POST", "/sim/faults", `{"path_prefix":"`+groups+`","status":503,"count":1}`), 204)
			apiErr(t, listGroups(e), 503, "unknown_error")
			must(t, listGroups(e))
			eq(t, "unreadable fault", admin("POST", "/sim/faults", `{`), 400)
			eq(t, "calls logged", len(e.sim.Calls()), 2)
		}},
	})
}
