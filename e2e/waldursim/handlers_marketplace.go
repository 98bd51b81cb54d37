package waldursim

import (
	"maps"
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

var orderFilters = []filter[APIOrder]{
	byUUID("offering_uuid", func(v APIOrder) string { return v.OfferingUUID }),
	byChoice("state", orderStates, func(v APIOrder) string { return v.State }),
	byTime("modified_before", func(v APIOrder) string { return v.Modified }),
}

// orderTransitions are the provider-side order actions that move an
// order: from the state each needs, to the one it ends in.
var orderTransitions = map[string]struct{ from, to string }{
	"approve_by_provider": {"pending-provider", "executing"},
	"set_state_done":      {"executing", "done"},
	"set_state_erred":     {"executing", "erred"},
}

// orderAction implements the provider-side order actions.
func (s *Server) orderAction(r *http.Request, in req, o *Order) (any, error) {
	fe := fieldErrors{}
	var msg, tb string
	action := r.PathValue("action")
	if action == "set_state_erred" {
		msg, _ = strField(in.body, fe, "error_message", false, true)
		tb, _ = strField(in.body, fe, "error_traceback", false, true)
	}
	t, ok := orderTransitions[action]
	if !ok {
		return nil, errNotFound
	}
	if err := fe.err(); err != nil {
		return nil, err
	}
	if o.State != t.from {
		return nil, stateConflict(t.from)
	}
	if t.to == "erred" {
		o.ErrorMessage, o.ErrorTraceback = msg, tb
	}
	s.setOrderState(o, t.to)
	if t.to == "done" {
		// Mastermind publishes after commit; a failure is logged, not
		// reported to the API caller.
		ev := s.orderEvent(o)
		_ = s.unlocked(func() error {
			_, _ = s.publish(r.Context(), ev)
			return nil
		})
	}
	return map[string]any{}, nil
}

// setOrderState moves an order and applies the resource side effects
// Mastermind applies. Caller holds s.mu.
func (s *Server) setOrderState(o *Order, to string) {
	o.State, o.Modified = to, s.now()
	res := s.st.resources.Get(o.Resource)
	switch to {
	case "done":
		o.CompletedAt = o.Modified
		if res == nil {
			return
		}
		res.State = "OK" // Create, Restore and Update
		if o.Type == "Terminate" {
			res.State = "Terminated"
		}
		if o.Type == "Update" && o.Limits != nil {
			res.Limits = maps.Clone(o.Limits)
		}
		res.Modified = o.Modified
	case "erred":
		if res != nil {
			res.State, res.Modified = "Erred", o.Modified
			res.ErrorMessage, res.ErrorTraceback = o.ErrorMessage, o.ErrorTraceback
		}
	}
}

var resourceFilters = []filter[APIResource]{
	byUUID("offering_uuid", func(v APIResource) string { return v.OfferingUUID }),
	byUUID("project_uuid", func(v APIResource) string { return v.ProjectUUID }),
	byChoice("state", resourceStates, func(v APIResource) string { return v.State }),
	byText("backend_id", func(v APIResource) string { return v.BackendID }),
}

func getTeam(r *http.Request, _ req, res *Resource) (any, error) {
	return simkit.Map(res.Team, func(m TeamMember) map[string]any { return teamView(simkit.BaseURL(r), m) }), nil
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
