package keycloaksim

import (
	"encoding/json"
	"io"
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

var (
	errGroupNotFound = errorCode(http.StatusNotFound, "Could not find group by id")
	errUserNotFound  = errorCode(http.StatusNotFound, "User not found")
	errRealmNotFound = errorCode(http.StatusNotFound, "Realm not found.")
	errNoRoute       = errorCode(http.StatusNotFound, "Unable to find matching target resource method")
	errUnauthorized  = simkit.OAuthError(http.StatusUnauthorized, "HttpUnauthorizedException", "HTTP 401 Unauthorized")
	errForbidden     = errorCode(http.StatusForbidden, "HTTP 403 Forbidden")
	errBadJSON       = errorCode(http.StatusBadRequest, "Cannot parse the JSON")
	errNameMissing   = errorMessage(http.StatusBadRequest, "Group name is missing")
)

// req is an authorized admin request on an existing realm, served with
// s.mu held.
type req struct {
	*http.Request
	rm *realm
	g  *group // the {id} of a /groups/{id} route
	u  *user  // the {id} of a /users/{id} route
}

// adminHandler serves one admin endpoint. It returns the body of a 200, or
// nil for a 204, or a simkit.Reply for anything else (a 201).
type adminHandler func(q req) (any, *apiError)

// decode reads a JSON body; Keycloak answers any unreadable one alike.
func decode[T any](r *http.Request) (T, *apiError) {
	var v T
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(data, &v) != nil {
		return v, errBadJSON
	}
	return v, nil
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

// paged applies Keycloak's first (default 0) and max (default defMax; a
// negative max means no limit) to items. Keycloak answers a malformed
// number with 404 (JAX-RS cannot bind it), which we mimic.
func paged[T any](r *http.Request, items []T, defMax int) ([]T, *apiError) {
	first, limit := 0, defMax
	for name, p := range map[string]*int{"first": &first, "max": &limit} {
		if v := r.URL.Query().Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, errorCode(http.StatusNotFound, "HTTP 404 Not Found")
			}
			*p = n
		}
	}
	items = append([]T{}, items[min(max(first, 0), len(items)):]...)
	if limit >= 0 && limit < len(items) {
		items = items[:limit]
	}
	return items, nil
}
