package waldursim

import (
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"version": s.cfg.Version, "latest_version": s.cfg.Version})
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, u *User) error {
	first, last, _ := strings.Cut(u.FullName, " ")
	simkit.WriteJSON(w, http.StatusOK, restrictFields(r, map[string]any{
		"uuid": u.UUID, "url": baseURL(r) + "/api/users/" + u.UUID + "/", "username": u.Username,
		"full_name": u.FullName, "first_name": first, "last_name": last, "email": u.Email,
		"is_staff": false, "is_support": false, "is_active": true,
	}))
	return nil
}

func (s *Server) listServiceProviders(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	customers := queryUUIDs(r, fe, "customer_uuid")
	if err := fe.err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []map[string]any
	for _, c := range simkit.SortedBy(s.st.customers, func(c *Customer) string { return c.UUID }) {
		if !matchAny(c.UUID, customers) {
			continue
		}
		items = append(items, map[string]any{
			"uuid": c.ServiceProviderUUID, "url": baseURL(r) + "/api/marketplace-service-providers/" + c.ServiceProviderUUID + "/",
			"customer_uuid": c.UUID, "customer_name": c.Name, "customer_slug": c.Slug,
		})
	}
	writeList(w, r, items)
	return nil
}
