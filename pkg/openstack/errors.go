package openstack

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// ErrQuota matches an OpenStack quota refusal (Neutron's 409 OverQuota,
// Nova's 403 "Quota exceeded", Cinder's 413); such an error is
// fault.Rejected too, terminal, since the tenant's quota or the order's size
// must change first.
var ErrQuota = errors.New("quota exceeded")

// ErrConflict matches a 409 that clears by itself (an object busy in
// another task, a port still being unbound): fault.Conflict, retried.
const ErrConflict = fault.Conflict

// ErrServerFailed matches a server that went ERROR; its message holds
// Nova's fault. Such an error is fault.Rejected too: Nova gave up on the
// server ("No valid host was found"), and booting it again is a new server.
var ErrServerFailed = errors.New("server failed")

// ErrTimeout matches a bounded wait that ran out (a volume never
// available, a server never ACTIVE or never gone). Such an error is
// fault.Rejected too, terminal: the step's wait already took longer than
// any retry would be worth.
var ErrTimeout = errors.New("timed out")

// Error is a failed OpenStack call or wait. It matches (errors.Is) the kind
// of package fault that classifies it, and openstack's own sentinels:
//   - fault.Rejected (terminal): 400, 403 and 413, a quota (ErrQuota
//     too), a server in ERROR (ErrServerFailed), a wait that ran out
//     (ErrTimeout), a 409 for an address someone else holds, a certificate
//     that does not verify;
//   - fault.Credentials (terminal): 401. gophercloud logs in again by
//     itself when a token expires (AllowReauth), so a 401 that reaches
//     sitebus means Keystone refused the credentials or the scope;
//   - fault.NotFound and fault.Invalid (terminal): 404. sitebus reads
//     objects by the ids it made or was given, so an object that is gone
//     will not come back; callers for whom absence is fine (deletes) test
//     IsNotFound first;
//   - fault.Invalid (terminal): what sitebus refuses before any call, and
//     names in the settings (a role, an image) OpenStack does not have
//     (fault.NotFound too);
//   - fault.NotManaged (terminal): an object that is not the owner's;
//   - fault.Conflict (ErrConflict, retried): a 409 other than a quota or
//     an address already taken;
//   - fault.Unavailable (retried): 5xx, 429, other statuses, timeouts and
//     refused connections.
//
// Messages name the operation, the object and OpenStack's own text, never
// a credential.
type Error struct {
	// Op is what was being done ("create network", "log in to ...").
	Op string
	// Object names the object ("network os-tenant-x-int-net"), "" for none.
	Object string
	// Status is the HTTP status (0 when there was no answer).
	Status int
	// Type is Neutron's error type (OverQuota, IpAddressAlreadyAllocated,
	// ...), "" for the other services.
	Type string
	// Message is the service's error text.
	Message string

	kinds []error
	err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("openstack: " + e.Op)
	if e.Object != "" {
		b.WriteString(" " + e.Object)
	}
	b.WriteString(": ")
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, "%d %s", e.Status, http.StatusText(e.Status))
		if e.Type != "" {
			b.WriteString(" " + e.Type)
		}
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	case e.Message != "":
		b.WriteString(e.Message)
	case e.err != nil:
		b.WriteString(e.err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.err }

// Is matches the sentinels that classify e.
func (e *Error) Is(target error) bool {
	for _, k := range e.kinds {
		if k == target {
			return true
		}
	}
	return false
}

// IsNotFound reports whether err is a 404, or a name OpenStack does not
// have.
func IsNotFound(err error) bool { return errors.Is(err, fault.NotFound) }

// IsQuota reports whether err is a quota refusal.
func IsQuota(err error) bool { return errors.Is(err, ErrQuota) }

// newError is an error of sitebus's own (no call failed), of the given
// kinds.
func newError(op, object, msg string, kinds ...error) *Error {
	return &Error{Op: op, Object: object, Message: msg, kinds: kinds}
}

// notManaged refuses an object that is not owner's.
func notManaged(op, object, project string, o Owner) *Error {
	where := ""
	if project != "" {
		where = " in project " + project
	}
	return newError(op, object, fmt.Sprintf("it exists%s and is not managed by sitebus for %s (no %q mark): refusing to touch it",
		where, o, o.Mark()), fault.NotManaged)
}

// classify turns a gophercloud error into an *Error (nil stays nil).
func classify(op, object string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op, Object: object, err: err, kinds: []error{fault.Unavailable}}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		e.Status = ue.Actual
		e.Type, e.Message = parseBody(ue.Body)
		e.kinds = statusKinds(e.Status, e.Type, e.Message)
		return e
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		e.kinds = []error{fault.Rejected}
		e.Message = err.Error() + " (the certificate does not verify: set the cloud's cacert, or verify: false)"
	}
	return e
}

// statusKinds classifies an answered call (see Error).
func statusKinds(status int, typ, msg string) []error {
	switch {
	case typ == "OverQuota" || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusForbidden && strings.Contains(strings.ToLower(msg), "quota exceeded"):
		return []error{ErrQuota, fault.Rejected}
	case status == http.StatusNotFound:
		return []error{fault.NotFound, fault.Invalid}
	case status == http.StatusConflict && (typ == "IpAddressAlreadyAllocated" || typ == "IpAddressGenerationFailure"):
		// Someone else holds the address (the load balancer's .10, say):
		// waiting does not free it.
		return []error{fault.Rejected}
	case status == http.StatusConflict:
		return []error{fault.Conflict}
	case status == http.StatusUnauthorized:
		return []error{fault.Credentials}
	case status == http.StatusBadRequest, status == http.StatusForbidden:
		return []error{fault.Rejected}
	}
	return []error{fault.Unavailable}
}

// parseBody reads the error text of each service's error body: Neutron's
// {"NeutronError":{"type","message"}}, Nova's and Cinder's
// {"<kind>":{"code","message"}}, Keystone's {"error":{"message"}}, or
// Glance's plain text.
func parseBody(body []byte) (typ, msg string) {
	typ, msg = parseBodyText(body)
	return httpbody.Shorten(typ, 128), httpbody.Shorten(msg, maxMessage)
}

// maxMessage bounds the service's text an Error quotes: it reaches logs,
// traces and Waldur's order error, which a proxy's error page (or a
// service gone wrong) must not flood.
const maxMessage = 1024

func parseBodyText(body []byte) (typ, msg string) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", strings.Join(strings.Fields(string(body)), " ")
	}
	if m, ok := top["message"]; ok {
		_ = json.Unmarshal(m, &msg)
		return "", msg
	}
	for _, raw := range top {
		var inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &inner) == nil && inner.Message != "" {
			return inner.Type, inner.Message
		}
	}
	return "", strings.TrimSpace(string(body))
}

// isErrorObject tells an OpenStack service's error answer from a result:
// one top-level key (Nova's and Cinder's "itemNotFound", Keystone's
// "error", Neutron's "NeutronError") over an object with a message and a
// code or type. A result's one key ("server", "token") holds no message.
func isErrorObject(body []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || len(top) != 1 {
		return false
	}
	for _, raw := range top {
		var inner struct {
			Message *string         `json:"message"`
			Code    json.RawMessage `json:"code"`
			Type    *string         `json:"type"`
		}
		return json.Unmarshal(raw, &inner) == nil && inner.Message != nil && (inner.Code != nil || inner.Type != nil)
	}
	return false
}
