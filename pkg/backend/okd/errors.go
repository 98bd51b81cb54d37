package okd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// wrapAPI classifies err of operation op ("create ProjectRequest", ...)
// on what (a name) as kubeapi.Kind does, and beyond that, for what
// OpenShift's token and TLS settings add:
//   - a certificate that does not verify: fault.Rejected, terminal; it
//     needs verify_cert or the server's certificate fixed;
//   - a refresh token the OAuth server refused: fault.Credentials,
//     terminal (the token source says so);
//   - a 401 or 403 that outlived the transport's one refresh (a token file
//     the rotating system has not rewritten yet, a grant not given yet)
//     stays retried, with a hint.
func wrapAPI(op, what string, err error) error {
	if err == nil {
		return nil
	}
	e := &kubeapi.Error{Kind: kubeapi.Kind(err), Msg: fmt.Sprintf("OpenShift: failed to %s %s: %v", op, what, err), Err: err}
	if e.Kind != fault.Unavailable {
		return e // the API server answered, and kubeapi.Kind read it
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		e.Kind = fault.Rejected
		e.Msg += " (the certificate does not verify: fix it, or set backend_settings.verify_cert: false)"
	case fault.KindOf(err) != "":
		e.Kind = fault.KindOf(err) // sitebus's token source said what failed
	case apierrors.IsUnauthorized(err):
		e.Msg += " (the token was refused, also after a refresh: check backend_settings.token / token_config)"
	case apierrors.IsForbidden(err):
		e.Msg += " (forbidden, also after a refresh of the token: check what the token's account may do)"
	}
	return e
}

func notFoundf(format string, args ...any) error {
	return &kubeapi.Error{Kind: fault.NotFound, Msg: fmt.Sprintf(format, args...)}
}
