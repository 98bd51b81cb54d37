package kubeapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/fault"
)

func TestKind(t *testing.T) {
	gr := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		name     string
		err      error
		kind     fault.Kind
		terminal bool
	}{
		{"an absent object is not found, for the caller to handle", apierrors.NewNotFound(gr, "x"), fault.NotFound, false},
		{"a bad request is invalid, terminal", apierrors.NewBadRequest("bad"), fault.Invalid, true},
		{"an object the schema refuses is invalid, terminal", apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, "x", nil), fault.Invalid, true},
		{"an object changed meanwhile is a conflict, retried", apierrors.NewConflict(gr, "x", errors.New("changed")), fault.Conflict, false},
		{"a name taken is a conflict, retried", apierrors.NewAlreadyExists(gr, "x"), fault.Conflict, false},
		{"an unsupported method is a terminal refusal", apierrors.NewMethodNotSupported(gr, "patch"), fault.Rejected, true},
		{"a 503 is unavailable, retried", apierrors.NewServiceUnavailable("later"), fault.Unavailable, false},
		{"a 429 is unavailable, retried", apierrors.NewTooManyRequests("slow down", 3), fault.Unavailable, false},
		{"a server timeout is unavailable, retried", apierrors.NewServerTimeout(gr, "create", 1), fault.Unavailable, false},
		{"RBAC not granted yet is retried", apierrors.NewForbidden(gr, "x", errors.New("no rolebinding yet")), fault.Unavailable, false},
		{"a refused token is retried until it is re-read", apierrors.NewUnauthorized("expired"), fault.Unavailable, false},
		{"a deadline is never final", context.DeadlineExceeded, fault.Unavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Kind(tt.err); got != tt.kind {
				t.Errorf("Kind(%v) = %q, want %q", tt.err, got, tt.kind)
			}
			e := &Error{Kind: Kind(tt.err), Msg: "m", Err: tt.err}
			if !errors.Is(e, tt.err) || !errors.Is(e, tt.kind) || fault.IsTerminal(e) != tt.terminal {
				t.Errorf("Error of %v: matches cause %v, kind %v; terminal %v, want %v",
					tt.err, errors.Is(e, tt.err), errors.Is(e, tt.kind), fault.IsTerminal(e), tt.terminal)
			}
		})
	}
	if Kind(nil) != "" {
		t.Error("nil has a kind")
	}
}

func TestSetDefaults(t *testing.T) {
	cfg := &rest.Config{}
	SetDefaults(cfg)
	if cfg.UserAgent != "sitebus" || cfg.Timeout != DefaultTimeout || cfg.QPS != 1000 || cfg.Burst != 2000 {
		t.Errorf("defaults %q %v %v %v", cfg.UserAgent, cfg.Timeout, cfg.QPS, cfg.Burst)
	}
	cfg = &rest.Config{UserAgent: "a", Timeout: time.Second, QPS: 5, Burst: 10}
	SetDefaults(cfg)
	if cfg.UserAgent != "a" || cfg.Timeout != time.Second || cfg.QPS != 5 || cfg.Burst != 10 {
		t.Error("a value set was replaced")
	}
}

func TestSameHard(t *testing.T) {
	if !SameHard(map[string]string{"requests.cpu": "4000m", "x": "not a quantity"}, map[string]string{"requests.cpu": "4", "x": "not a quantity"}) {
		t.Error("4000m and 4 differ")
	}
	for _, b := range []map[string]string{{"requests.cpu": "3"}, {"requests.cpu": "x"}, {"limits.cpu": "4"}, {}} {
		if SameHard(map[string]string{"requests.cpu": "4"}, b) {
			t.Errorf("4 cores equal %v", b)
		}
	}
}

func TestValidateName(t *testing.T) {
	if err := ValidateName("Namespace name", "waldur-a1"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"", "-a", "A", strings.Repeat("a", 64)} {
		err := ValidateName("Namespace name", n)
		if !errors.Is(err, fault.Invalid) || !strings.HasPrefix(err.Error(), "Namespace name") {
			t.Errorf("%q: %v", n, err)
		}
	}
}
