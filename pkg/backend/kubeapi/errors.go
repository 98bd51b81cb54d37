// Package kubeapi holds what the backends do alike with the Kubernetes
// API: classifying the API server's errors into the backend sentinels and
// building the rest.Config and validating namespace names (managedns and
// okd, which use client-go), and comparing ResourceQuota quantities (okd
// and rancher). It does no I/O of
// its own.
package kubeapi

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Error is a failed API call: a message naming what failed, matching a
// backend sentinel (errors.Is) when one applies, and unwrapping to the
// client-go error for callers that look deeper (apierrors.IsConflict, ...).
type Error struct {
	Kind error // backend.ErrInvalid, backend.ErrNotFound or nil (retryable)
	Msg  string
	Err  error
}

func (e *Error) Error() string        { return e.Msg }
func (e *Error) Unwrap() error        { return e.Err }
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Kind classifies an error of the API server:
//   - 404: backend.ErrNotFound (the caller decides whether absence is fine);
//   - 400 and 422: the request itself is wrong (a quota the schema
//     refuses, say), so backend.ErrInvalid, terminal;
//   - anything else (5xx, 409 conflicts, throttling, timeouts, refused
//     connections, RBAC not yet granted) may pass: nil, retryable.
func Kind(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return backend.ErrNotFound
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return backend.ErrInvalid
	}
	return nil
}
