package okd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/backend"
)

// apiError is a failed API call: a message naming what failed, matching a
// backend sentinel (errors.Is) when one applies, and unwrapping to the
// client-go error for callers that look deeper.
type apiError struct {
	kind error // backend.ErrInvalid, backend.ErrNotFound or nil (retryable)
	msg  string
	err  error
}

func (e *apiError) Error() string        { return e.msg }
func (e *apiError) Unwrap() error        { return e.err }
func (e *apiError) Is(target error) bool { return e.kind != nil && target == e.kind }

// wrapAPI classifies err of operation op ("create ProjectRequest", ...)
// on what (a name):
//   - 404: backend.ErrNotFound (the caller decides whether absence is fine);
//   - 400 and 422: the request itself is wrong, so backend.ErrInvalid;
//   - a certificate that does not verify: backend.ErrInvalid, it needs
//     verify_cert or the server's certificate fixed;
//   - anything else may pass and is retryable: 5xx, conflicts,
//     throttling, timeouts, refused connections, a 403 while RBAC is being
//     granted, and a 401 that outlived the transport's one refresh (a
//     token file the rotating system has not rewritten yet).
func wrapAPI(op, what string, err error) error {
	if err == nil {
		return nil
	}
	e := &apiError{msg: fmt.Sprintf("OpenShift: failed to %s %s: %v", op, what, err), err: err}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case apierrors.IsNotFound(err):
		e.kind = backend.ErrNotFound
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		e.kind = backend.ErrInvalid
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		e.kind = backend.ErrInvalid
		e.msg += " (the certificate does not verify: fix it, or set backend_settings.verify_cert: false)"
	case errors.Is(err, backend.ErrInvalid):
		e.kind = backend.ErrInvalid // the OAuth server refused the refresh token
	case apierrors.IsUnauthorized(err):
		e.msg += " (the token was refused, also after a refresh: check backend_settings.token / token_config)"
	}
	return e
}

func notFoundf(format string, args ...any) error {
	return &apiError{kind: backend.ErrNotFound, msg: fmt.Sprintf(format, args...)}
}
