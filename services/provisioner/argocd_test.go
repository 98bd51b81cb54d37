package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// kubeAPI is the Secrets part of a Kubernetes API server, in memory,
// accepting one bearer token.
type kubeAPI struct {
	mu      sync.Mutex
	secrets map[string]secretJSON // namespace/name
	srv     *httptest.Server
}

func newKubeAPI(t *testing.T) *kubeAPI {
	k := &kubeAPI{secrets: map[string]secretJSON{}}
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer argocd-admin-token" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/secrets/{name}", auth(func(w http.ResponseWriter, r *http.Request) {
		s, ok := k.secrets[r.PathValue("ns")+"/"+r.PathValue("name")]
		if !ok {
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(s)
	}))
	mux.HandleFunc("POST /api/v1/namespaces/{ns}/secrets", auth(func(w http.ResponseWriter, r *http.Request) {
		var s secretJSON
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil || s.Metadata.Namespace != r.PathValue("ns") {
			http.Error(w, "bad secret", http.StatusBadRequest)
			return
		}
		key := s.Metadata.Namespace + "/" + s.Metadata.Name
		if _, ok := k.secrets[key]; ok {
			http.Error(w, "exists", http.StatusConflict)
			return
		}
		k.secrets[key] = s
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s)
	}))
	mux.HandleFunc("DELETE /api/v1/namespaces/{ns}/secrets/{name}", auth(func(w http.ResponseWriter, r *http.Request) {
		delete(k.secrets, r.PathValue("ns")+"/"+r.PathValue("name"))
		_, _ = w.Write([]byte(`{"kind":"Status","status":"Success"}`))
	}))
	k.srv = httptest.NewServer(mux)
	t.Cleanup(k.srv.Close)
	return k
}

func (k *kubeAPI) kubeconfig(token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: argocd
  cluster: {server: %q}
users:
- name: admin
  user: {token: %q}
contexts:
- name: argocd
  context: {cluster: argocd, user: admin}
current-context: argocd
`, k.srv.URL, token)
}

func (k *kubeAPI) secret(key string) (secretJSON, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.secrets[key]
	return s, ok
}

func TestArgoCDClusterSecret(t *testing.T) {
	ctx := context.Background()
	k := newKubeAPI(t)
	a, err := NewArgoCD(k.kubeconfig("argocd-admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	cs := ClusterSecret{Namespace: "argocd", Name: "cluster-abc", ResourceUUID: resourceUUID,
		Labels: map[string]string{argoSecretTypeLabel: "cluster"}, StringData: map[string]string{"name": "k8s-x"}}
	tests := []struct {
		name        string
		run         func() error
		wantErr     error
		wantPresent bool
	}{
		{"ensure makes the Secret", func() error { _, err := a.EnsureClusterSecret(ctx, cs); return err }, nil, true},
		{"ensure again adopts it", func() error {
			created, err := a.EnsureClusterSecret(ctx, cs)
			if created {
				return errors.New("made twice")
			}
			return err
		}, nil, true},
		{"another resource's Secret of that name is refused", func() error {
			other := cs
			other.ResourceUUID = "ffffffff-ffff-4fff-8fff-ffffffffffff"
			_, err := a.EnsureClusterSecret(ctx, other)
			return err
		}, backend.ErrNotManaged, true},
		{"another resource may not delete it", func() error {
			return a.DeleteClusterSecret(ctx, "argocd", "cluster-abc", "ffffffff-ffff-4fff-8fff-ffffffffffff")
		}, backend.ErrNotManaged, true},
		{"delete removes it", func() error { return a.DeleteClusterSecret(ctx, "argocd", "cluster-abc", resourceUUID) }, nil, false},
		{"delete of nothing is done", func() error { return a.DeleteClusterSecret(ctx, "argocd", "cluster-abc", resourceUUID) }, nil, false},
	}
	for _, tc := range tests {
		err := tc.run()
		if (tc.wantErr == nil && err != nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if _, ok := k.secret("argocd/cluster-abc"); ok != tc.wantPresent {
			t.Errorf("%s: Secret present = %v", tc.name, ok)
		}
	}
	bad, err := NewArgoCD(k.kubeconfig("wrong-token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.EnsureClusterSecret(ctx, cs); !fault.IsTerminal(err) {
		t.Errorf("a refused token: %v, want a terminal error", err)
	}
}

func TestCreateRegistersTheClusterWithArgoCDAndTerminateRemovesIt(t *testing.T) {
	h := newHarness(t)
	k := newKubeAPI(t)
	a, err := NewArgoCD(k.kubeconfig("argocd-admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	h.o.ArgoCD = a
	h.o.Settings.ArgoCDKubeconfig, h.o.Settings.ArgoCDNamespace = "set", "argocd"
	if sg := h.run(t, ClusterCreate, "000000000000000000000000000000d1", attributes(3, 1)); sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	key := "argocd/cluster-" + strings.ReplaceAll(resourceUUID, "-", "")
	s, ok := k.secret(key)
	if !ok {
		t.Fatalf("no Secret %s", key)
	}
	if s.Metadata.Labels[argoSecretTypeLabel] != "cluster" || s.Metadata.Labels[longhornLabel] != "true" ||
		s.StringData["name"] != "k8s-production-cluster" || !strings.HasSuffix(s.StringData["server"], "/k8s/clusters/c-m-00000001") ||
		s.StringData["config"] != `{"bearerToken":"kubeconfig-u-1:s3cret"}` {
		t.Errorf("Secret %+v", s)
	}
	h.w.orderState = waldur.OrderStateExecuting
	if sg := h.run(t, ClusterTerminate, "000000000000000000000000000000d2", nil); sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if _, ok := k.secret(key); ok {
		t.Error("the ArgoCD Secret outlived the terminate")
	}
}

// An ArgoCD that refuses or is down never undoes a finished cluster
// (Mastermind only logs it): the step is retried, then its failure is
// logged, counted and shown in Waldur's backend metadata, and the create
// succeeds with the cluster kept.
func TestArgoCDFailureLeavesTheClusterAndIsReported(t *testing.T) {
	tests := map[string]struct {
		argo func(t *testing.T) ArgoCD
		want string
	}{
		"ArgoCD refuses the credentials": {
			argo: func(t *testing.T) ArgoCD {
				a, err := NewArgoCD(newKubeAPI(t).kubeconfig("wrong-token"))
				if err != nil {
					t.Fatal(err)
				}
				return a
			},
			want: "401 Unauthorized",
		},
		"ArgoCD is down on every attempt": {
			argo: func(t *testing.T) ArgoCD {
				k := newKubeAPI(t)
				a, err := NewArgoCD(k.kubeconfig("argocd-admin-token"))
				if err != nil {
					t.Fatal(err)
				}
				k.srv.Close()
				return a
			},
			want: "connect",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.o.ArgoCD = tc.argo(t)
			h.o.Settings.ArgoCDKubeconfig, h.o.Settings.ArgoCDNamespace = "set", "argocd"
			sg := h.run(t, ClusterCreate, "000000000000000000000000000000e1", attributes(1, 1))
			if sg.Status != saga.StatusSucceeded {
				t.Fatalf("create %s: %s", sg.Status, sg.Error)
			}
			if n := len(h.w.byKind("server")); n == 0 {
				t.Error("the cluster's VMs are gone")
			}
			if e, _ := h.w.metadata["argocd_error"].(string); !strings.Contains(e, tc.want) {
				t.Errorf("argocd_error %q, want it to say %q", e, tc.want)
			}
			if n := testutil.ToFloat64(h.acts.argocdFailures); n != 1 {
				t.Errorf("%v failures counted, want 1", n)
			}
		})
	}
}
