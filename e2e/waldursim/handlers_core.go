package waldursim

import (
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func getMe(r *http.Request, in req) (any, error) {
	u := in.u
	first, last, _ := strings.Cut(u.FullName, " ")
	return map[string]any{
		"uuid": u.UUID, "url": baseURL(r) + "/api/users/" + u.UUID + "/", "username": u.Username,
		"full_name": u.FullName, "first_name": first, "last_name": last, "email": u.Email,
		"is_staff": false, "is_support": false, "is_active": true,
	}, nil
}

// baseURL is scheme://host of the request, for the url fields of objects.
func baseURL(r *http.Request) string { return simkit.BaseURL(r) }
