package keycloak

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// Kinds of errors, as package fault names them; match them with errors.Is.
// fault.IsTerminal decides whether retrying can help.
const (
	// ErrNotFound: the group or user does not exist (404). Retried when
	// unhandled, but callers decide: a user not in Keycloak yet is pending.
	ErrNotFound = fault.NotFound
	// ErrConflict: Keycloak answers 409 when a sibling group has the name
	// already; the caller re-reads the group.
	ErrConflict = fault.Conflict
	// ErrUnavailable: Keycloak did not answer, answered 5xx or 429, or
	// refused a fresh token with 401. Retried.
	ErrUnavailable = fault.Unavailable
	// ErrCredentials: the token endpoint refused the configured client or
	// credentials. Terminal: retrying only feeds brute-force detection.
	ErrCredentials = fault.Credentials
	// ErrRejected: any other 4xx (400, 403, ...). Terminal.
	ErrRejected = fault.Rejected
	// ErrNotManaged: the group is not marked as sitebus's (or the Python
	// agent's), so it is not ours to delete. Terminal.
	ErrNotManaged = fault.NotManaged
	// ErrInvalid: a bad argument (an empty name), or an answer sitebus
	// cannot read. Terminal.
	ErrInvalid = fault.Invalid
)

// ErrUnauthorized matches an admin call refused with 401 even with a fresh
// token. Such an error is of kind ErrUnavailable too, so it is retried:
// Keycloak invalidates tokens when it restarts, and the next login works.
var ErrUnauthorized = errors.New("unauthorized")

// Error is a failed Keycloak call. Its message says what sitebus was doing
// and what Keycloak said; it never contains a token or password.
type Error struct {
	Op     string // e.g. "create group ns_x_admin"
	Status int    // HTTP status; 0 when no response came
	Msg    string // Keycloak's message, or the transport error
	kind   fault.Kind
	// unauthorized: a 401 on an admin call (ErrUnauthorized).
	unauthorized bool
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("keycloak: %s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("keycloak: %s: HTTP %d: %s", e.Op, e.Status, e.Msg)
}

// Is matches the error's kind (ErrNotFound, ErrUnavailable, ...), and
// ErrUnauthorized for a 401.
func (e *Error) Is(target error) bool {
	return target == e.kind || e.unauthorized && target == ErrUnauthorized
}

// retryable reports whether the client's own retry loop should repeat a
// call: Keycloak was unreachable, overloaded (5xx, 429) or refused a fresh
// token (401). A 404 or 409 is an answer, not a failure to get one.
func retryable(err error) bool { return errors.Is(err, fault.Unavailable) }

// kindOf classifies an HTTP status of an admin call: 401 is ErrUnavailable
// (see ErrUnauthorized), 404 and 409 their own kinds, 429 and 5xx
// unavailable, and any other 4xx a refusal no retry changes.
func kindOf(status int) fault.Kind {
	switch {
	case status == 0, status == http.StatusTooManyRequests, status >= 500, status == http.StatusUnauthorized:
		return fault.Unavailable
	case status == http.StatusNotFound:
		return fault.NotFound
	case status == http.StatusConflict:
		return fault.Conflict
	default:
		return fault.Rejected
	}
}

// classify turns what gocloak returned into an *Error (or the context's
// error when ctx ended: gocloak flattens transport errors to strings, so
// the context is what tells a cancelled call from a timeout). secrets
// (the admin's password, the access token) are removed from the message:
// Keycloak, or a proxy in front of it, may echo the request in its error
// body, and the message reaches logs and Waldur's order error.
func classify(ctx context.Context, op string, err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("keycloak: %s: %w", op, context.Cause(ctx))
	}
	var ae *gocloak.APIError
	if !errors.As(err, &ae) {
		return &Error{Op: op, Msg: quote(err.Error(), secrets), kind: ErrInvalid}
	}
	return &Error{Op: op, Status: ae.Code, Msg: quote(trimStatus(ae.Message, ae.Code), secrets), kind: kindOf(ae.Code),
		unauthorized: ae.Code == http.StatusUnauthorized}
}

// maxMessage bounds Keycloak's text an Error quotes: gocloak quotes the
// error fields of a failed answer whole, and a broken Keycloak's or a
// proxy's could be megabytes.
const maxMessage = 1024

// quote is msg as an Error carries it: the secrets removed first, so that
// no part of one survives the cut, then cut to maxMessage.
func quote(msg string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return httpbody.Shorten(msg, maxMessage)
}

// classifyLogin is classify for the token endpoint, where 400 and 401 mean
// the client or the credentials are wrong.
func classifyLogin(ctx context.Context, err error, secrets ...string) error {
	err = classify(ctx, "log in", err, secrets...)
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized) {
		e.kind, e.unauthorized = ErrCredentials, false
		e.Msg += " (check keycloak_username, keycloak_password, client_id and keycloak_user_realm)"
	}
	// A 404 from the token endpoint is a wrong URL or user realm, not a
	// missing group or user: left as ErrNotFound it would read as "no such
	// group" to a caller that takes not-found for an answer (GetGroup's
	// nil), and a failed login would pass for a success.
	if e != nil && e.Status == http.StatusNotFound {
		e.kind, e.unauthorized = ErrRejected, false
		e.Msg += " (check keycloak_url and keycloak_user_realm)"
	}
	return err
}

// trimStatus drops gocloak's "404 Not Found: " prefix: Error prints the
// status itself.
func trimStatus(msg string, status int) string {
	if status == 0 {
		return msg
	}
	prefix := fmt.Sprintf("%d %s", status, http.StatusText(status))
	msg = strings.TrimPrefix(msg, prefix)
	msg = strings.TrimPrefix(msg, ": ")
	if msg == "" {
		return http.StatusText(status)
	}
	return msg
}

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return -1
}

// StatusError is the error the client returns when Keycloak answers an
// admin call with status: of the kind the client gives that status (404
// ErrNotFound, 409 ErrConflict, 5xx ErrUnavailable, ...). In-memory
// stand-ins of the client (package keycloakfake) fail with it, so that
// code under test sees exactly what the real client would return.
func StatusError(op string, status int, msg string) *Error {
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Op: op, Status: status, Msg: msg, kind: kindOf(status), unauthorized: status == http.StatusUnauthorized}
}

// NotManagedError is the client's refusal to delete a group that does not
// carry sitebus's (or the Python agent's) managed_by mark.
func NotManagedError(op, msg string) *Error {
	return &Error{Op: op, Msg: msg, kind: ErrNotManaged}
}

// CredentialsError is the client's error when the token endpoint refuses
// the configured client or credentials with status (400 or 401).
func CredentialsError(status int) *Error {
	return &Error{Op: "log in", Status: status, Msg: http.StatusText(status) +
		" (check keycloak_username, keycloak_password, client_id and keycloak_user_realm)", kind: ErrCredentials}
}
