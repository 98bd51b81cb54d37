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

	"github.com/sitebus/sitebus/pkg/backend"
)

func TestKind(t *testing.T) {
	gr := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		err  error
		kind error
	}{
		{apierrors.NewNotFound(gr, "x"), backend.ErrNotFound},
		{apierrors.NewBadRequest("bad"), backend.ErrInvalid},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, "x", nil), backend.ErrInvalid},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), nil},
		{apierrors.NewServiceUnavailable("later"), nil},
		{context.DeadlineExceeded, nil},
	}
	for _, tt := range tests {
		if got := Kind(tt.err); got != tt.kind {
			t.Errorf("Kind(%v) = %v, want %v", tt.err, got, tt.kind)
		}
		e := &Error{Kind: Kind(tt.err), Msg: "m", Err: tt.err}
		if !errors.Is(e, tt.err) || (tt.kind != nil && !errors.Is(e, tt.kind)) || (tt.kind == nil && errors.Is(e, backend.ErrInvalid)) {
			t.Errorf("Error of %v does not match as it should", tt.err)
		}
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
		if !errors.Is(err, backend.ErrInvalid) || !strings.HasPrefix(err.Error(), "Namespace name") {
			t.Errorf("%q: %v", n, err)
		}
	}
}
