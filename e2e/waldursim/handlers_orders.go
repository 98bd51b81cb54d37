package waldursim

import (
	"net/http"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04", "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	offerings := queryUUIDs(r, fe, "offering_uuid")
	resources := queryUUIDs(r, fe, "resource_uuid")
	projects := queryUUIDs(r, fe, "project_uuid")
	states := queryChoices(r, fe, "state", orderStates)
	types := queryChoices(r, fe, "type", orderTypes)
	var before, after time.Time
	for key, dst := range map[string]*time.Time{"modified_before": &before, "modified_after": &after} {
		if v := r.URL.Query().Get(key); v != "" {
			t, ok := parseTime(v)
			if !ok {
				fe.add(key, "Enter a valid date/time.")
			}
			*dst = t
		}
	}
	if err := fe.err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, id := range s.st.orderOrder {
		o := s.st.orders[id]
		v := s.st.orderView(baseURL(r), o)
		if !matchAny(v.OfferingUUID, offerings) || !matchAny(o.Resource, resources) ||
			!matchAny(v.ProjectUUID, projects) || !matchAny(o.State, states) || !matchAny(o.Type, types) {
			continue
		}
		mod, _ := parseTime(o.Modified)
		if (!before.IsZero() && !mod.Before(before)) || (!after.IsZero() && mod.Before(after)) {
			continue
		}
		items = append(items, toMap(v))
	}
	writeList(w, r, items)
	return nil
}

// orderAction implements the provider-side order transitions.
func (s *Server) orderAction(w http.ResponseWriter, r *http.Request, _ *User) error {
	id, err := pathUUID(r)
	if err != nil {
		return err
	}
	body, aerr := decodeBody(r)
	if aerr != nil {
		return aerr
	}
	action := r.PathValue("action")
	s.mu.Lock()
	o := s.st.orders[id]
	if o == nil {
		s.mu.Unlock()
		return errNotFound
	}
	var emit *pendingEvent
	status, resp, err := func() (int, any, error) {
		switch action {
		case "approve_by_provider":
			if o.State != "pending-provider" {
				return 0, nil, stateConflict("pending-provider")
			}
			s.setOrderState(o, "executing")
			return http.StatusOK, map[string]any{}, nil
		case "reject_by_provider":
			if o.State != "pending-provider" {
				return 0, nil, stateConflict("pending-provider")
			}
			s.setOrderState(o, "rejected")
			return http.StatusOK, map[string]any{}, nil
		case "set_state_done":
			if o.State != "executing" {
				return 0, nil, stateConflict("executing")
			}
			s.setOrderState(o, "done")
			emit = s.orderEvent(o)
			return http.StatusOK, map[string]any{}, nil
		case "set_state_erred":
			fe := fieldErrors{}
			msg, _ := strField(body, fe, "error_message", false, true)
			tb, _ := strField(body, fe, "error_traceback", false, true)
			if err := fe.err(); err != nil {
				return 0, nil, err
			}
			if o.State != "executing" {
				return 0, nil, stateConflict("executing")
			}
			o.ErrorMessage, o.ErrorTraceback = msg, tb
			s.setOrderState(o, "erred")
			return http.StatusOK, map[string]any{}, nil
		case "set_backend_id":
			fe := fieldErrors{}
			bid, ok := strField(body, fe, "backend_id", true, false)
			if err := fe.err(); err != nil {
				return 0, nil, err
			}
			if ok {
				o.BackendID, o.Modified = bid, s.now()
			}
			return http.StatusOK, map[string]any{"status": "Order backend_id has been changed."}, nil
		}
		return 0, nil, errNotFound
	}()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if emit != nil {
		// Mastermind publishes after commit; a failure is logged, not
		// reported to the API caller.
		_, _ = s.publish(r.Context(), emit)
	}
	simkit.WriteJSON(w, status, resp)
	return nil
}

// setOrderState moves an order and applies the resource side effects
// Mastermind applies. Caller holds s.mu.
func (s *Server) setOrderState(o *Order, to string) {
	o.State, o.Modified = to, s.now()
	res := s.st.resources[o.Resource]
	switch to {
	case "done":
		o.CompletedAt = o.Modified
		if res == nil {
			return
		}
		switch o.Type {
		case "Create", "Restore":
			res.State = "OK"
		case "Update":
			res.State = "OK"
			if o.Limits != nil {
				res.Limits = cloneInts(o.Limits)
			}
		case "Terminate":
			res.State = "Terminated"
		}
		res.Modified = o.Modified
	case "erred":
		if res != nil {
			res.State, res.Modified = "Erred", o.Modified
			res.ErrorMessage, res.ErrorTraceback = o.ErrorMessage, o.ErrorTraceback
		}
	case "rejected", "canceled":
		if res != nil {
			if o.Type == "Create" {
				res.State = "Terminated"
			} else {
				res.State = "OK"
			}
			res.Modified = o.Modified
		}
	}
}

func cloneInts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
