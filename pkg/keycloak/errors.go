package keycloak

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Kinds of errors; match them with errors.Is.
var (
	// ErrNotFound: the group or user does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a sibling group has that name already (409).
	ErrConflict = errors.New("conflict")
	// ErrUnauthorized: an admin call was refused with 401 even with a
	// fresh token; retryable (tokens may be invalidated by a restart).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnavailable: Keycloak did not answer, answered 5xx or 429.
	// Retryable.
	ErrUnavailable = errors.New("unavailable")
	// ErrCredentials: the token endpoint refused the configured client or
	// credentials. Terminal: retrying only feeds brute-force detection.
	ErrCredentials = errors.New("credentials rejected")
	// ErrRejected: any other 4xx (400, 403, ...). Terminal.
	ErrRejected = errors.New("rejected")
	// ErrNotManaged: the group is not marked as sitebus's (or the Python
	// agent's), so it is not ours to delete. Terminal; it is
	// backend.ErrNotManaged, so backend.IsTerminal agrees.
	ErrNotManaged = backend.ErrNotManaged
	// ErrInvalid: a bad argument (an empty name). Terminal; it is
	// backend.ErrInvalid.
	ErrInvalid = backend.ErrInvalid
)

// Error is a failed Keycloak call. Its message says what sitebus was doing
// and what Keycloak said; it never contains a token or password.
type Error struct {
	Op     string // e.g. "create group ns_x_admin"
	Status int    // HTTP status; 0 when no response came
	Msg    string // Keycloak's message, or the transport error
	kind   error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("keycloak: %s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("keycloak: %s: HTTP %d: %s", e.Op, e.Status, e.Msg)
}

// Is matches the error's kind (ErrNotFound, ErrUnavailable, ...).
func (e *Error) Is(target error) bool { return target == e.kind }

// IsRetryable reports whether the same call may succeed later: Keycloak
// was unreachable, overloaded (5xx, 429) or refused a fresh token (401).
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnauthorized)
}

// IsTerminal reports whether retrying err cannot help: a 4xx other than
// 401, 404, 409 and 429, rejected credentials, a group that is not ours,
// or a bad argument. 404 and 409 are neither: callers decide (a user not in
// Keycloak yet is pending, a name taken is re-read).
func IsTerminal(err error) bool {
	return errors.Is(err, ErrRejected) || errors.Is(err, ErrCredentials) ||
		errors.Is(err, ErrNotManaged) || errors.Is(err, ErrInvalid)
}

// kindOf classifies an HTTP status of an admin call.
func kindOf(status int) error {
	switch {
	case status == 0, status == http.StatusTooManyRequests, status >= 500:
		return ErrUnavailable
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict:
		return ErrConflict
	default:
		return ErrRejected
	}
}

// classify turns what gocloak returned into an *Error (or the context's
// error when ctx ended: gocloak flattens transport errors to strings, so
// the context is what tells a cancelled call from a timeout).
func classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("keycloak: %s: %w", op, context.Cause(ctx))
	}
	var ae *gocloak.APIError
	if !errors.As(err, &ae) {
		return &Error{Op: op, Msg: err.Error(), kind: ErrInvalid}
	}
	return &Error{Op: op, Status: ae.Code, Msg: trimStatus(ae.Message, ae.Code), kind: kindOf(ae.Code)}
}

// classifyLogin is classify for the token endpoint, where 400 and 401 mean
// the client or the credentials are wrong.
func classifyLogin(ctx context.Context, err error) error {
	err = classify(ctx, "log in", err)
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized) {
		e.kind = ErrCredentials
		e.Msg += " (check keycloak_username, keycloak_password, client_id and keycloak_user_realm)"
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
