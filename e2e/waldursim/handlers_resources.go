package waldursim

import (
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) listResources(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	offerings := queryUUIDs(r, fe, "offering_uuid")
	projects := queryUUIDs(r, fe, "project_uuid")
	customers := queryUUIDs(r, fe, "customer_uuid")
	states := queryChoices(r, fe, "state", resourceStates)
	if err := fe.err(); err != nil {
		return err
	}
	backendIDs := r.URL.Query()["backend_id"]
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, id := range s.st.resourceOrder {
		v := s.st.resourceView(baseURL(r), s.st.resources[id])
		if !matchAny(v.OfferingUUID, offerings) || !matchAny(v.ProjectUUID, projects) ||
			!matchAny(v.CustomerUUID, customers) || !matchAny(v.State, states) {
			continue
		}
		if len(backendIDs) > 0 && backendIDs[0] != "" && v.BackendID != backendIDs[0] {
			continue
		}
		v.MembershipSyncStatuses = nil
		items = append(items, toMap(v))
	}
	writeList(w, r, items)
	return nil
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request, _ *User, id string) error {
	res := s.st.resources[id]
	if res == nil {
		return errNotFound
	}
	out := []map[string]any{}
	for _, m := range res.Team {
		out = append(out, restrictFields(r, teamView(baseURL(r), m)))
	}
	simkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

var resourceOK = map[string]string{"status": "OK"}

// resourceAction implements the provider-side resource updates.
func (s *Server) resourceAction(w http.ResponseWriter, r *http.Request, _ *User, id string, body map[string]any) error {
	res := s.st.resources[id]
	if res == nil {
		return errNotFound
	}
	fe := fieldErrors{}
	var resp any = resourceOK
	switch r.PathValue("action") {
	case "set_backend_id":
		bid, ok := strField(body, fe, "backend_id", true, true)
		if ok {
			res.BackendID = bid
		}
		resp = map[string]string{"status": "Resource backend_id has been changed."}
	case "set_limits":
		if m, ok := objField(body, fe, "limits", true); ok {
			limits := intMap(m, fe, "limits")
			if len(fe) == 0 {
				res.Limits = limits
			}
		}
	case "set_backend_metadata":
		if m, ok := objField(body, fe, "backend_metadata", true); ok {
			res.BackendMetadata = jsonPlain(m).(map[string]any)
		}
	case "set_endpoints":
		if l, ok := listField(body, fe, "endpoints", true); ok {
			var eps []map[string]any
			for _, e := range l {
				m, isObj := e.(map[string]any)
				if !isObj {
					fe.add("endpoints", "Invalid data. Expected a dictionary.")
					continue
				}
				ef := fieldErrors{}
				name, _ := strField(m, ef, "name", true, false)
				url, _ := strField(m, ef, "url", true, false)
				for k, v := range ef {
					fe["endpoints."+k] = v
				}
				eps = append(eps, map[string]any{"name": name, "url": url})
			}
			if len(fe) == 0 {
				res.Endpoints = eps
			}
		}
	case "set_as_erred":
		msg, _ := strField(body, fe, "error_message", false, true)
		tb, _ := strField(body, fe, "error_traceback", false, true)
		if len(fe) == 0 {
			res.State, res.ErrorMessage, res.ErrorTraceback = "Erred", msg, tb
		}
	case "set_as_ok":
		res.State, res.ErrorMessage, res.ErrorTraceback = "OK", "", ""
	case "refresh_last_sync":
		res.LastSync = s.now()
	case "set_membership_sync_statuses":
		if l, ok := listField(body, fe, "statuses", true); ok {
			for _, e := range l {
				m, isObj := e.(map[string]any)
				if !isObj {
					fe.add("statuses", "Invalid data. Expected a dictionary.")
					continue
				}
				ef := fieldErrors{}
				for _, k := range []string{"username", "scope_type", "role_name", "state"} {
					strField(m, ef, k, true, false)
				}
				for k, v := range ef {
					fe["statuses."+k] = v
				}
			}
			if len(fe) == 0 {
				res.MembershipSyncStatuses = jsonPlain(l).([]any)
			}
		}
	default:
		return errNotFound
	}
	if err := fe.err(); err != nil {
		return err
	}
	res.Modified = s.now()
	simkit.WriteJSON(w, http.StatusOK, resp)
	return nil
}
