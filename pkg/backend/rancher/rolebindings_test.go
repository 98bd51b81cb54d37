package rancher

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
)

const bindingResource = "0a0a0a0a0a0a4a0a8a0a0a0a0a0a0a0a"

// bindingRancher is Rancher with sitebus's imported cluster vc-demo
// (v3 c-m-1), its bindings by id, and the calls that changed them.
type bindingRancher struct {
	mu       sync.Mutex
	bindings map[string]map[string]any
	posted   []map[string]any
	deleted  []string
	conflict bool
}

func (f *bindingRancher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	reply := func(status int, v any) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	id, item := strings.CutPrefix(r.URL.Path, "/v3/clusterroletemplatebindings/")
	switch {
	case r.URL.Path == "/v1/provisioning.cattle.io.clusters/fleet-default/vc-demo":
		reply(http.StatusOK, map[string]any{"id": "fleet-default/vc-demo", "metadata": map[string]any{"name": "vc-demo", "namespace": "fleet-default",
			"annotations": map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: bindingResource}}, "status": map[string]any{"clusterName": "c-m-1"}})
	case r.Method == http.MethodPost && r.URL.Path == "/v3/clusterroletemplatebindings":
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.posted = append(f.posted, body)
		if f.conflict {
			reply(http.StatusConflict, map[string]any{"type": "error", "status": 409, "code": "AlreadyExists", "message": "exists"})
			return
		}
		body["id"] = "c-m-1:crtb-new"
		reply(http.StatusCreated, body)
	case item && r.Method == http.MethodGet:
		b, ok := f.bindings[id]
		if !ok {
			reply(http.StatusNotFound, map[string]any{"type": "error", "status": 404, "code": "NotFound", "message": "not found"})
			return
		}
		reply(http.StatusOK, b)
	case item && r.Method == http.MethodDelete:
		f.deleted = append(f.deleted, id)
		reply(http.StatusOK, map[string]any{})
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"error","status":404,"code":"NotFound"}`)
	}
}

func bindingClient(t *testing.T, f *bindingRancher) *ClusterClient {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClusterClient(ClusterOptions{BackendURL: srv.URL, AccessKey: "token-x", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A cluster binding sitebus makes carries its marks; a duplicate (409) is
// no error; only a binding with sitebus's marks for the resource is ever
// deleted.
func TestClusterRoleBindingsAreMarkedAndOnlyMarkedOnesDeleted(t *testing.T) {
	ref := ClusterRef{Name: "vc-demo", ResourceUUID: bindingResource}
	marks := map[string]any{AnnotationManaged: "true", AnnotationResourceUUID: bindingResource}
	f := &bindingRancher{bindings: map[string]map[string]any{
		"c-m-1:crtb-ours":    {"id": "c-m-1:crtb-ours", "clusterId": "c-m-1", "roleTemplateId": "cluster-member", "annotations": marks},
		"c-m-1:creator":      {"id": "c-m-1:creator", "clusterId": "c-m-1", "roleTemplateId": "cluster-owner", "userId": "user-1"},
		"c-m-2:crtb-another": {"id": "c-m-2:crtb-another", "clusterId": "c-m-2", "roleTemplateId": "cluster-member", "annotations": marks},
	}}
	c := bindingClient(t, f)
	ctx := testCtx(t)

	made, err := c.CreateClusterRoleBinding(ctx, ref, RoleBinding{RoleTemplateID: "cluster-member", GroupPrincipalID: "keycloakoidc_group://devs"})
	if err != nil || !made {
		t.Fatalf("create: made %v err %v", made, err)
	}
	got := f.posted[0]
	if ann, _ := got["annotations"].(map[string]any); ann[AnnotationManaged] != "true" || ann[AnnotationResourceUUID] != bindingResource ||
		got["clusterId"] != "c-m-1" || got["groupPrincipalId"] != "keycloakoidc_group://devs" {
		t.Errorf("posted %v, want the group on c-m-1 with sitebus's marks", got)
	}
	f.conflict = true
	if made, err := c.CreateClusterRoleBinding(ctx, ref, RoleBinding{RoleTemplateID: "cluster-member", UserID: "u-1"}); err != nil || made {
		t.Errorf("duplicate: made %v err %v, want bound already", made, err)
	}

	if err := c.DeleteClusterRoleBinding(ctx, ref, "c-m-1:crtb-ours"); err != nil {
		t.Errorf("delete ours: %v", err)
	}
	for _, id := range []string{"c-m-1:creator", "c-m-2:crtb-another"} {
		if err := c.DeleteClusterRoleBinding(ctx, ref, id); !errors.Is(err, backend.ErrNotManaged) {
			t.Errorf("delete %s: %v, want refused as not sitebus's", id, err)
		}
	}
	if err := c.DeleteClusterRoleBinding(ctx, ref, "c-m-1:gone"); err != nil {
		t.Errorf("delete a binding already gone: %v", err)
	}
	if len(f.deleted) != 1 || f.deleted[0] != "c-m-1:crtb-ours" {
		t.Errorf("deleted %v, want only sitebus's", f.deleted)
	}
}
