package managedns

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// A proxy or a broken API server can answer 200 with a Kubernetes Status
// of failure, which client-go decodes as the ManagedNamespace asked for:
// the CR "exists". Through kubeapi.GuardAnswers it fails, retried, naming
// Kubernetes.
func TestAFailureStatusUnderA200IsRetriedNotTakenForTheCR(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"upstream down","code":503}`))
	}))
	t.Cleanup(ts.Close)
	b, err := New(DefaultSettings(), map[string]config.BackendComponent{"cpu": {}}, Options{RESTConfig: &rest.Config{Host: ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := b.Exists(t.Context(), "waldur-x")
	if err == nil {
		t.Fatalf("no error (exists %v)", ok)
	}
	if fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "Kubernetes") || !strings.Contains(err.Error(), "error object") {
		t.Fatalf("error %v (kind %q), want an unavailable one naming Kubernetes and the error object", err, fault.KindOf(err))
	}
}
