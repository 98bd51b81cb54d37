package managedns

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

func TestWrapAPI(t *testing.T) {
	gr := schema.GroupResource{Group: Group, Resource: Resource}
	tests := []struct {
		name     string
		err      error
		kind     error
		terminal bool
	}{
		{"404 is not found", apierrors.NewNotFound(gr, "waldur-x"), backend.ErrNotFound, false},
		{"422 is invalid and terminal",
			apierrors.NewInvalid(schema.GroupKind{Group: Group, Kind: Kind}, "waldur-x",
				field.ErrorList{field.Invalid(field.NewPath("spec", "quota", "cpu"), 5, "must be a string")}),
			backend.ErrInvalid, true},
		{"400 is invalid and terminal", apierrors.NewBadRequest("bad patch"), backend.ErrInvalid, true},
		{"500 is retryable", apierrors.NewInternalError(errors.New("etcd")), nil, false},
		{"503 is retryable", apierrors.NewServiceUnavailable("later"), nil, false},
		{"a conflict is retryable", apierrors.NewConflict(gr, "waldur-x", errors.New("changed")), nil, false},
		{"a timeout is retryable", context.DeadlineExceeded, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wrapAPI("patch", "waldur-x", tt.err)
			if want := "Failed to patch ManagedNamespace waldur-x: " + tt.err.Error(); err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
			if fault.IsTerminal(err) != tt.terminal {
				t.Errorf("IsTerminal = %v", !tt.terminal)
			}
			for _, k := range []error{backend.ErrNotFound, backend.ErrInvalid, backend.ErrNotManaged} {
				if errors.Is(err, k) != (k == tt.kind) {
					t.Errorf("errors.Is(%v) = %v", k, k != tt.kind)
				}
			}
			if !errors.Is(err, tt.err) {
				t.Error("the API error is not kept")
			}
		})
	}
}
