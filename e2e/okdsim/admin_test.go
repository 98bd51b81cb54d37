package okdsim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/okdsim"
)

// TestAdminAPI drives the /sim/ API a process-run simulator is inspected
// with: no token needed, outside faults.
func TestAdminAPI(t *testing.T) {
	e := newEnv(t, okdsim.Options{})
	post := func(path, body string) int {
		t.Helper()
		resp, err := http.Post(e.sim.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("projects are listed without a token while the API is down", func(t *testing.T) {
		name := e.uniqueName(t, "adm")
		e.c.requestProject(name, "Adm", "", nil).want(t, http.StatusCreated)
		eq(t, "down", post("/sim/down", `{"down":true}`), http.StatusNoContent)
		t.Cleanup(func() { e.sim.Down(false) })
		resp, err := http.Get(e.sim.URL() + "/sim/projects")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var ps []okdsim.Project
		if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range ps {
			found = found || (p.Name == name && p.DisplayName == "Adm" && p.Requester == okdsim.DefaultUser)
		}
		if !found {
			t.Errorf("/sim/projects lacks %s: %+v", name, ps)
		}
	})

	t.Run("POST /sim/token rotates the token file", func(t *testing.T) {
		e.sim.Down(false)
		eq(t, "rotate", post("/sim/token", `{"token":"sha256~admin-rotated"}`), http.StatusNoContent)
		t.Cleanup(func() { _ = e.sim.RotateToken(okdsim.DefaultToken) })
		e.c.do("GET", api+"/projects", nil).want(t, http.StatusUnauthorized)
		eq(t, "Token()", e.sim.Token(), "sha256~admin-rotated")
		eq(t, "empty token refused", post("/sim/token", `{}`), http.StatusBadRequest)
	})
}
