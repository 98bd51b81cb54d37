package managedns

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/backend"
)

// apiError is a failed Kubernetes call: its message is the Python
// plugin's, it matches a backend sentinel (errors.Is) when one applies,
// and it still unwraps to the client-go error for callers that look
// deeper (apierrors.IsConflict, ...).
type apiError struct {
	kind error // backend.ErrInvalid, backend.ErrNotFound or nil (retryable)
	msg  string
	err  error
}

func (e *apiError) Error() string        { return e.msg }
func (e *apiError) Unwrap() error        { return e.err }
func (e *apiError) Is(target error) bool { return e.kind != nil && target == e.kind }

// wrapAPI classifies err from the API server for operation op ("create",
// "patch", ...) on the CR name:
//   - 404: backend.ErrNotFound (the caller decides whether absence is fine);
//   - 400 and 422: the request itself is wrong (a quota the schema
//     refuses, say), so backend.ErrInvalid, terminal;
//   - anything else (5xx, 409 conflicts, throttling, timeouts, refused
//     connections, RBAC not yet granted) may pass: retryable.
func wrapAPI(op, name string, err error) error {
	if err == nil {
		return nil
	}
	e := &apiError{msg: fmt.Sprintf("Failed to %s ManagedNamespace %s: %v", op, name, err), err: err}
	switch {
	case apierrors.IsNotFound(err):
		e.kind = backend.ErrNotFound
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		e.kind = backend.ErrInvalid
	}
	return e
}
