// Package kubeapi holds what the backends do alike with the Kubernetes
// API: classifying the API server's errors into package fault's kinds and
// building the rest.Config and validating namespace names (managedns and
// okd, which use client-go), and comparing ResourceQuota quantities (okd
// and rancher). It does no I/O of its own.
package kubeapi

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Error is a failed API call: a message naming what failed, of a kind of
// package fault (errors.Is), and unwrapping to the client-go error for
// callers that look deeper (apierrors.IsConflict, ...).
type Error struct {
	Kind fault.Kind // see Kind; "" matches no kind
	Msg  string
	Err  error
}

func (e *Error) Error() string        { return e.Msg }
func (e *Error) Unwrap() error        { return e.Err }
func (e *Error) Is(target error) bool { return e.Kind != "" && target == e.Kind }

// Kind classifies an error of the API server by apimachinery's reasons:
//   - NotFound (404): fault.NotFound (the caller decides whether absence
//     is fine);
//   - Conflict and AlreadyExists (409): fault.Conflict, retried (the
//     object changed meanwhile; a re-read settles it);
//   - Invalid (422) and BadRequest (400): the request itself is wrong (a
//     quota the schema refuses, say), so fault.Invalid, terminal;
//   - MethodNotSupported, NotAcceptable, UnsupportedMediaType and
//     RequestEntityTooLarge: fault.Rejected, terminal;
//   - anything else: fault.Unavailable, retried. That is 5xx, 429,
//     timeouts and refused connections, and also Forbidden (403) and
//     Unauthorized (401): RBAC granted a moment ago has not reached the
//     API server's cache yet, Kubernetes answers 403 to a create in a
//     namespace being terminated, and a rotated service-account token is
//     re-read; the bus's bounded retries end a 403 that does not pass.
func Kind(err error) fault.Kind {
	switch {
	case err == nil:
		return ""
	case apierrors.IsNotFound(err):
		return fault.NotFound
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fault.Conflict
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fault.Invalid
	case apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		return fault.Rejected
	}
	return fault.Unavailable
}
