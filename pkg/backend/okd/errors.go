package okd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
)

// wrapAPI classifies err of operation op ("create ProjectRequest", ...)
// on what (a name) as kubeapi.Kind does (404 not found, 400 and 422
// invalid, the rest retryable), and beyond that, for what OpenShift's
// token and TLS settings add:
//   - a certificate that does not verify: backend.ErrInvalid, it needs
//     verify_cert or the server's certificate fixed;
//   - a refresh token the OAuth server refused: backend.ErrInvalid;
//   - a 401 that outlived the transport's one refresh (a token file the
//     rotating system has not rewritten yet) stays retryable, with a hint.
func wrapAPI(op, what string, err error) error {
	if err == nil {
		return nil
	}
	e := &kubeapi.Error{Kind: kubeapi.Kind(err), Msg: fmt.Sprintf("OpenShift: failed to %s %s: %v", op, what, err), Err: err}
	if e.Kind != nil {
		return e
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		e.Kind = backend.ErrInvalid
		e.Msg += " (the certificate does not verify: fix it, or set backend_settings.verify_cert: false)"
	case errors.Is(err, backend.ErrInvalid):
		e.Kind = backend.ErrInvalid // the OAuth server refused the refresh token
	case apierrors.IsUnauthorized(err):
		e.Msg += " (the token was refused, also after a refresh: check backend_settings.token / token_config)"
	}
	return e
}

func notFoundf(format string, args ...any) error {
	return &kubeapi.Error{Kind: backend.ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}
