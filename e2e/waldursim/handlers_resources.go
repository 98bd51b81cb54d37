package waldursim

import (
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

var resourceFilters = []filter[APIResource]{
	byUUID("offering_uuid", func(v APIResource) string { return v.OfferingUUID }),
	byUUID("project_uuid", func(v APIResource) string { return v.ProjectUUID }),
	byChoice("state", resourceStates, func(v APIResource) string { return v.State }),
	byText("backend_id", func(v APIResource) string { return v.BackendID }),
}

func getTeam(r *http.Request, _ req, res *Resource) (any, error) {
	return simkit.Map(res.Team, func(m TeamMember) map[string]any { return teamView(baseURL(r), m) }), nil
}

// resourceAction implements the provider-side resource updates.
func (s *Server) resourceAction(r *http.Request, in req, res *Resource) (any, error) {
	fe := fieldErrors{}
	body := in.body
	var resp any = map[string]string{"status": "OK"}
	switch r.PathValue("action") {
	case "set_backend_id":
		bid, ok := strField(body, fe, "backend_id", true, true)
		if ok {
			res.BackendID = bid
		}
		resp = map[string]string{"status": "Resource backend_id has been changed."}
	case "set_limits":
		if m, ok := typedField[map[string]any](body, fe, "limits", true); ok {
			limits := intMap(m, fe, "limits")
			if len(fe) == 0 {
				res.Limits = limits
			}
		}
	case "set_backend_metadata":
		if m, ok := typedField[map[string]any](body, fe, "backend_metadata", true); ok {
			res.BackendMetadata = jsonPlain(m).(map[string]any)
		}
	case "set_endpoints":
		var eps []map[string]any
		if eachDict(body, fe, "endpoints", func(m map[string]any, ef fieldErrors) {
			name, _ := strField(m, ef, "name", true, false)
			url, _ := strField(m, ef, "url", true, false)
			eps = append(eps, map[string]any{"name": name, "url": url})
		}) {
			res.Endpoints = eps
		}
	case "set_as_erred":
		msg, _ := strField(body, fe, "error_message", false, true)
		tb, _ := strField(body, fe, "error_traceback", false, true)
		if len(fe) == 0 {
			res.State, res.ErrorMessage, res.ErrorTraceback = "Erred", msg, tb
		}
	case "set_as_ok":
		res.State, res.ErrorMessage, res.ErrorTraceback = "OK", "", ""
	default:
		return nil, errNotFound
	}
	if err := fe.err(); err != nil {
		return nil, err
	}
	res.Modified = s.now()
	return resp, nil
}
