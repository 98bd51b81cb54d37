package keycloaksim

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiError is an error response with the body Keycloak sends for it.
type apiError = simkit.Error

// errorMessage is the {"errorMessage": ...} shape of Keycloak's
// ErrorResponse (validation and conflicts).
func errorMessage(status int, msg string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"errorMessage": msg}}
}

// errorCode is the {"error": ...} shape of JAX-RS exceptions (404s).
func errorCode(status int, msg string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"error": msg}}
}

// oauthError is the token endpoint's OAuth2 error shape.
func oauthError(status int, code, desc string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"error": code, "error_description": desc}}
}

var (
	errGroupNotFound  = errorCode(http.StatusNotFound, "Could not find group by id")
	errUserNotFound   = errorCode(http.StatusNotFound, "User not found")
	errRealmNotFound  = errorCode(http.StatusNotFound, "Realm not found.")
	errNoRoute        = errorCode(http.StatusNotFound, "Unable to find matching target resource method")
	errUnauthorized   = oauthError(http.StatusUnauthorized, "HttpUnauthorizedException", "HTTP 401 Unauthorized")
	errForbidden      = errorCode(http.StatusForbidden, "HTTP 403 Forbidden")
	errBadJSON        = errorCode(http.StatusBadRequest, "Cannot parse the JSON")
	errGroupPathUnset = errorCode(http.StatusNotFound, "Group path does not exist")
)

func writeErr(w http.ResponseWriter, e *apiError) { simkit.WriteError(w, e) }

// intParam reads an optional integer query parameter; Keycloak answers a
// malformed one with 404 (JAX-RS cannot bind it), which we mimic.
func intParam(r *http.Request, name string, def int) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errorCode(http.StatusNotFound, "HTTP 404 Not Found")
	}
	return n, nil
}

// pageParams reads Keycloak's first (default 0) and max (default defMax)
// paging parameters.
func pageParams(r *http.Request, defMax int) (first, max int, e *apiError) {
	if first, e = intParam(r, "first", 0); e == nil {
		max, e = intParam(r, "max", defMax)
	}
	return first, max, e
}

// boolParam reads an optional boolean query parameter the way JAX-RS does:
// "true" in any case is true, anything else false.
func boolParam(r *http.Request, name string, def bool) bool {
	v, ok := r.URL.Query()[name]
	if !ok || len(v) == 0 {
		return def
	}
	return strings.EqualFold(v[0], "true")
}

// page applies Keycloak's first/max: a negative max means no limit.
func page[T any](items []T, first, max int) []T {
	if first < 0 {
		first = 0
	}
	if first >= len(items) {
		return []T{}
	}
	items = items[first:]
	if max >= 0 && max < len(items) {
		items = items[:max]
	}
	return items
}
