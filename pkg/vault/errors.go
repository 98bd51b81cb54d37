package vault

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// Error is a failed Vault call. It matches (errors.Is) the kind of package
// fault that classifies it:
//   - 400, 401, 403: fault.Rejected, terminal. A token without the rights
//     (403 permission denied), a used or expired secret-id (400 invalid
//     secret id) or a malformed request: no retry changes that.
//   - 404: fault.NotFound (the caller decides whether absence is fine).
//   - 5xx (a sealed or standby Vault answers 503), 429, other statuses,
//     timeouts and refused connections: fault.Unavailable, retried.
//   - a certificate that does not verify: fault.Rejected, terminal; it
//     needs vault_ca_file or vault_tls_verify.
//
// Messages hold the operation, path and Vault's error text, never a token
// or secret-id.
type Error struct {
	// Op is what was being done ("put policy", "login", ...).
	Op string
	// Path is the Vault API path (below /v1/).
	Path string
	// Status is the HTTP status (0 when there was no answer).
	Status int
	// Errors are Vault's error strings.
	Errors []string

	kind    fault.Kind
	badCert bool // the server's certificate did not verify
	err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vault: %s (%s): ", e.Op, e.Path)
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, "%d %s", e.Status, http.StatusText(e.Status))
		if len(e.Errors) > 0 {
			b.WriteString(": " + httpbody.Shorten(strings.Join(e.Errors, "; "), maxErrors))
		}
	case e.err != nil:
		b.WriteString(e.err.Error())
	}
	if e.badCert {
		b.WriteString(" (the certificate does not verify: set vault_ca_file, or vault_tls_verify: false)")
	}
	return b.String()
}

func (e *Error) Unwrap() error        { return e.err }
func (e *Error) Is(target error) bool { return e.kind != "" && target == e.kind }

// PermissionDenied reports whether err is Vault's 403: the token lacks the
// policy for the path.
func PermissionDenied(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusForbidden
}

// classify turns an api error into an *Error (nil stays nil).
func classify(op, path string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Path: path, err: err, kind: fault.Unavailable}
	var re *vaultapi.ResponseError
	if errors.As(err, &re) {
		e.Status, e.Errors = re.StatusCode, re.Errors
		e.kind = statusKind(re.StatusCode)
		return e
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		e.kind, e.badCert = fault.Rejected, true
	}
	return e
}

// maxErrors bounds Vault's error text an Error quotes: a body that is
// not Vault's JSON (a proxy's page) comes whole, and the message reaches
// logs, traces and Waldur's order error.
const maxErrors = 1024

// statusKind classifies Vault's answer by its status (see Error).
func statusKind(status int) fault.Kind {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
		return fault.Rejected
	case http.StatusNotFound:
		return fault.NotFound
	}
	return fault.Unavailable
}
