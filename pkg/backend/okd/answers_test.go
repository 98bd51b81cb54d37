package okd

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// A proxy or a broken API server can answer 200 with a Kubernetes Status
// of failure; client-go decodes it as the object asked for, so the project
// "existed". It must fail, retried, naming OpenShift.
func TestAFailureStatusUnderA200IsRetriedNotTakenForTheProject(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"upstream down","code":503}`))
	}))
	t.Cleanup(ts.Close)
	path := filepath.Join(t.TempDir(), "token")
	writeToken(t, path, "tok")
	s := DefaultSettings()
	s.APIURL, s.TokenType, s.TokenFilePath = ts.URL, TokenFile, path
	b, err := New(s, map[string]config.BackendComponent{"cpu": {}}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := b.Exists(t.Context(), "waldur-alloc-x")
	if err == nil {
		t.Fatalf("no error (exists %v)", ok)
	}
	if fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "OpenShift") || !strings.Contains(err.Error(), "error object") {
		t.Fatalf("error %v (kind %q), want an unavailable one naming OpenShift and the error object", err, fault.KindOf(err))
	}
}
