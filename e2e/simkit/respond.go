package simkit

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"
)

// Error is an error answer with its body already in the simulated
// service's format: a string is sent as text/plain, anything else as JSON.
type Error struct {
	Status int
	Body   any
	// Message is the error's text without its body's wrapping, for a
	// service that reports another's refusal as its own (Nova Neutron's).
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("HTTP %d: %v", e.Status, e.Body) }

// OAuthError is an OAuth 2.0 token endpoint's error answer (RFC 6749
// section 5.2): {"error": code, "error_description": desc}.
func OAuthError(status int, code, desc string) *Error {
	return &Error{Status: status, Body: map[string]string{"error": code, "error_description": desc}}
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers e.
func WriteError(w http.ResponseWriter, e *Error) {
	if s, ok := e.Body.(string); ok {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(e.Status)
		_, _ = w.Write([]byte(s))
		return
	}
	WriteJSON(w, e.Status, e.Body)
}

// BaseURL is the scheme and host of r, which links are built on.
func BaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// NewUUID returns a random version 4 UUID in its dashed form.
func NewUUID() string {
	return uuid.NewString()
}
