package rancher

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/pkg/fault"
)

// ErrConflict matches a 409 from Rancher (an object of that name exists,
// or changed meanwhile): fault.Conflict, retried.
const ErrConflict = fault.Conflict

// APIError is a failed Rancher call. It matches (errors.Is) the kind of
// package fault that classifies it:
//   - 401: fault.Credentials, 403: fault.Rejected, both terminal. The API
//     key is wrong, expired or lacks rights, and no retry fixes that; the
//     message names the access key (never the secret key).
//   - 404: fault.NotFound (the caller decides whether absence is fine).
//   - 409: fault.Conflict (ErrConflict), retried.
//   - 400 and 422: the request itself is wrong, so fault.Invalid,
//     terminal; an importYaml whose apply failed on the server side
//     (Error from server (InternalError) ...) is fault.Unavailable though.
//   - 5xx, 429, other statuses, timeouts and refused connections:
//     fault.Unavailable, retried. A certificate that does not verify is
//     fault.Rejected, terminal: it needs verify_cert or the server's
//     certificate fixed.
type APIError struct {
	Method, Path string
	// Status is the HTTP status (0 when there was no answer).
	Status int
	// Code and Message are from Rancher's error body
	// {"type":"error","code":...,"message":...}.
	Code, Message string

	kind fault.Kind
	msg  string
	err  error
}

func (e *APIError) Error() string        { return e.msg }
func (e *APIError) Unwrap() error        { return e.err }
func (e *APIError) Is(target error) bool { return e.kind != "" && target == e.kind }

// statusError classifies an answered call.
func statusError(method, path, accessKey string, status int, code, message string) *APIError {
	e := &APIError{Method: method, Path: path, Status: status, Code: code, Message: message, kind: fault.Unavailable}
	detail := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if code != "" {
		detail += " " + code
	}
	if message != "" {
		detail += ": " + message
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.kind = fault.Rejected
		if status == http.StatusUnauthorized {
			e.kind = fault.Credentials
		}
		e.msg = fmt.Sprintf("Rancher refused access key %q (%s on %s %s): check backend_settings.username and "+
			"password, the key's expiry and its access to the cluster", accessKey, detail, method, path)
		return e
	case http.StatusNotFound:
		e.kind = fault.NotFound
	case http.StatusConflict:
		e.kind = fault.Conflict
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		if !serverSideApplyFailure(message) {
			e.kind = fault.Invalid
		}
	}
	e.msg = fmt.Sprintf("Rancher API request failed: %s %s: %s", method, path, detail)
	return e
}

// serverSideApplyFailure tells an importYaml answer (400 with kubectl's
// output) that failed in the API server, not on the manifest.
func serverSideApplyFailure(msg string) bool {
	for _, reason := range []string{"(InternalError)", "(ServiceUnavailable)", "(Timeout)", "(ServerTimeout)",
		"(TooManyRequests)", "(Conflict)", "(NotFound)"} {
		if strings.Contains(msg, "Error from server "+reason) {
			return true
		}
	}
	return false
}

// transportError classifies a call that got no answer.
func transportError(method, path string, err error) *APIError {
	e := &APIError{Method: method, Path: path, err: err, kind: fault.Unavailable,
		msg: fmt.Sprintf("Rancher API request failed: %s %s: %v", method, path, err)}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		e.kind = fault.Rejected
		e.msg += " (the certificate does not verify: fix it, or set backend_settings.verify_cert: false)"
	}
	return e
}
