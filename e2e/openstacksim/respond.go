package openstacksim

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiErr is an error answer with its body already in the service's format.
type apiErr = simkit.Error

// keystoneErr is Keystone's {"error":{"code","message","title"}}.
func keystoneErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Body: map[string]any{"error": map[string]any{
		"code": status, "message": msg, "title": http.StatusText(status)}}}
}

// novaErr is Nova's and Cinder's {"<kind>":{"code","message"}}.
func novaErr(status int, msg string) *apiErr {
	kind := map[int]string{
		400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest",
		413: "overLimit",
	}[status]
	kind = cmp.Or(kind, "computeFault")
	inner := map[string]any{"code": status, "message": msg}
	if status == http.StatusRequestEntityTooLarge {
		inner["retryAfter"] = "0"
	}
	return &apiErr{Status: status, Body: map[string]any{kind: inner}}
}

// neutronErr is Neutron's {"NeutronError":{"type","message","detail"}}.
func neutronErr(status int, typ, msg string) *apiErr {
	return &apiErr{Status: status, Body: map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": msg, "detail": ""}}}
}

// glanceErr is Glance's plain text error page.
func glanceErr(status int, msg string) *apiErr {
	return &apiErr{Status: status, Body: fmt.Sprintf("%d %s\n\n%s\n\n   ", status, http.StatusText(status), msg)}
}

// errUnauthorized is keystonemiddleware's answer to a missing, unknown or
// expired token, the same in front of every service.
var errUnauthorized = keystoneErr(http.StatusUnauthorized, "The request you have made requires authentication.")

// The services' 400s, for simkit.Decode and list formats.
func keystoneBad(msg string) *apiErr { return keystoneErr(http.StatusBadRequest, msg) }
func novaBad(msg string) *apiErr     { return novaErr(http.StatusBadRequest, msg) }
func neutronBad(msg string) *apiErr  { return neutronErr(http.StatusBadRequest, "HTTPBadRequest", msg) }
func glanceBad(msg string) *apiErr   { return glanceErr(http.StatusBadRequest, msg) }

// Time formats of the services' JSON.
const (
	isoZ     = "2006-01-02T15:04:05Z"       // Nova, Neutron, Keystone, Glance
	isoMicro = "2006-01-02T15:04:05.000000" // Cinder, Nova's launched_at
)

func fmtTime(t time.Time) string  { return t.UTC().Format(isoZ) }
func fmtMicro(t time.Time) string { return t.UTC().Format(isoMicro) }
func orNil(s string) any          { return simkit.OrNil(s) }

// refuse is one check of a request, for cmp.Or (see simkit.Refuse).
var refuse = simkit.Refuse[apiErr]

// nullable is a request field that may be absent, null or a value.
type nullable[T any] = simkit.Nullable[T]
