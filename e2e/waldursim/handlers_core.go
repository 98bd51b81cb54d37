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

func (s *Server) serviceProviders(r *http.Request, _ req) []map[string]any {
	return simkit.Select(s.st.customers, func(c *Customer) string { return c.UUID }, func(*Customer) bool { return true },
		func(c *Customer) map[string]any {
			return map[string]any{
				"uuid": c.ServiceProviderUUID, "url": baseURL(r) + "/api/marketplace-service-providers/" + c.ServiceProviderUUID + "/",
				"customer_uuid": c.UUID, "customer_name": c.Name, "customer_slug": c.Slug,
			}
		})
}

// baseURL is scheme://host of the request, for the url fields of objects.
func baseURL(r *http.Request) string { return simkit.BaseURL(r) }
