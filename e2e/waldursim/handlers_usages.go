package waldursim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func billingPeriod(t string) (string, bool) {
	tm, ok := parseTime(t)
	if !ok {
		return "", false
	}
	return tm.Format("2006-01") + "-01", true
}

// queryPeriod reads a billing period filter (any date in the month).
func queryPeriod(r *http.Request, fe fieldErrors, key string) string {
	v := r.URL.Query().Get(key)
	if v == "" {
		return ""
	}
	p, ok := billingPeriod(v)
	if !ok {
		fe.add(key, "Enter a valid date.")
	}
	return p
}

// decimalField accepts "12.50" or 12.5 and renders Waldur's two decimals.
func decimalField(m map[string]any, fe fieldErrors, key string) (string, bool) {
	var f float64
	switch x := m[key].(type) {
	case nil:
		fe.add(key, "This field is required.")
		return "", false
	case json.Number:
		f, _ = x.Float64()
	case string:
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			fe.add(key, "A valid number is required.")
			return "", false
		}
		f = v
	default:
		fe.add(key, "A valid number is required.")
		return "", false
	}
	if f < 0 {
		fe.add(key, "Ensure this value is greater than or equal to 0.")
		return "", false
	}
	return fmt.Sprintf("%.2f", f), true
}

func (s *Server) listUsages(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	resources := queryUUIDs(r, fe, "resource_uuid")
	offerings := queryUUIDs(r, fe, "offering_uuid")
	period := queryPeriod(r, fe, "billing_period")
	if err := fe.err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, u := range s.st.usages {
		if !matchAny(u.ResourceUUID, resources) || !matchAny(u.OfferingUUID, offerings) ||
			(period != "" && u.BillingPeriod != period) {
			continue
		}
		m := toMap(*u)
		m["url"] = baseURL(r) + "/api/marketplace-component-usages/" + u.UUID + "/"
		items = append(items, m)
	}
	writeList(w, r, items)
	return nil
}

func (s *Server) setUsage(w http.ResponseWriter, r *http.Request, _ *User) error {
	body, aerr := decodeBody(r)
	if aerr != nil {
		return aerr
	}
	fe := fieldErrors{}
	resID, okRes := uuidField(body, fe, "resource", true)
	date, okDate := strField(body, fe, "date", false, false)
	usages, _ := listField(body, fe, "usages", true)
	period := ""
	if okDate {
		p, ok := billingPeriod(date)
		if !ok {
			fe.add("date", "Datetime has wrong format.")
		}
		period = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !okDate {
		date = s.now()
		period, _ = billingPeriod(date)
	}
	res := s.st.resources[resID]
	if okRes && res == nil {
		fe.add("resource", "Invalid pk \""+resID+"\" - object does not exist.")
	}
	type entry struct{ typ, amount string }
	var entries []entry
	for _, e := range usages {
		m, ok := e.(map[string]any)
		if !ok {
			fe.add("usages", "Invalid data. Expected a dictionary.")
			continue
		}
		ef := fieldErrors{}
		typ, okT := strField(m, ef, "type", true, false)
		amount, _ := decimalField(m, ef, "amount")
		if okT && res != nil && s.component(res.Offering, typ) == nil {
			fe.add("usages", fmt.Sprintf("Component %q is not found.", typ))
		}
		for k, v := range ef {
			fe["usages."+k] = v
		}
		entries = append(entries, entry{typ, amount})
	}
	if err := fe.err(); err != nil {
		return err
	}
	for _, e := range entries {
		comp := s.component(res.Offering, e.typ)
		var u *ComponentUsage
		for _, x := range s.st.usages {
			if x.ResourceUUID == res.UUID && x.Type == e.typ && x.BillingPeriod == period {
				u = x
			}
		}
		if u == nil {
			u = &ComponentUsage{UUID: newUUID(), ResourceUUID: res.UUID, ResourceName: res.Name,
				OfferingUUID: res.Offering, Type: e.typ, BillingPeriod: period, Created: s.now()}
			u.Name, _ = comp["name"].(string)
			u.MeasuredUnit, _ = comp["measured_unit"].(string)
			s.st.usages = append(s.st.usages, u)
		}
		u.Usage, u.Date, u.Modified = e.amount, date, s.now()
	}
	simkit.WriteJSON(w, http.StatusCreated, map[string]any{})
	return nil
}

// component finds an offering component by type. Caller holds s.mu.
func (s *Server) component(offering, typ string) map[string]any {
	off := s.st.offerings[offering]
	if off == nil {
		return nil
	}
	for _, c := range off.Components {
		if t, _ := c["type"].(string); t == typ {
			return c
		}
	}
	return nil
}

func (s *Server) setUserUsages(w http.ResponseWriter, r *http.Request, _ *User, id string, body map[string]any) error {
	var u *ComponentUsage
	for _, x := range s.st.usages {
		if x.UUID == id {
			u = x
		}
	}
	if u == nil {
		return errNotFound
	}
	fe := fieldErrors{}
	l, _ := listField(body, fe, "usages", true)
	var out []map[string]any
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			fe.add("usages", "Invalid data. Expected a dictionary.")
			continue
		}
		ef := fieldErrors{}
		name, _ := strField(m, ef, "username", true, false)
		usage, _ := decimalField(m, ef, "usage")
		date, _ := strField(m, ef, "date", false, false)
		user, _ := strField(m, ef, "user", false, true)
		for k, v := range ef {
			fe["usages."+k] = v
		}
		out = append(out, map[string]any{"uuid": newUUID(), "component_usage": u.UUID, "username": name,
			"usage": usage, "date": date, "user": user, "resource_uuid": u.ResourceUUID,
			"component_type": u.Type, "billing_period": u.BillingPeriod})
	}
	if err := fe.err(); err != nil {
		return err
	}
	u.UserUsages = out
	simkit.WriteJSON(w, http.StatusCreated, map[string]any{})
	return nil
}

func (s *Server) listUserUsages(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	resources := queryUUIDs(r, fe, "resource_uuid")
	period := queryPeriod(r, fe, "component_usage__billing_period")
	if err := fe.err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, u := range s.st.usages {
		if !matchAny(u.ResourceUUID, resources) || (period != "" && u.BillingPeriod != period) {
			continue
		}
		for _, uu := range u.UserUsages {
			m := map[string]any{}
			for k, v := range uu {
				m[k] = v
			}
			m["component_usage"] = baseURL(r) + "/api/marketplace-component-usages/" + u.UUID + "/"
			items = append(items, m)
		}
	}
	writeList(w, r, items)
	return nil
}

// Usages returns a copy of the component usages Waldur holds, in the order
// they were first set (tests compare them with what the agent measured).
func (s *Server) Usages() []ComponentUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ComponentUsage, 0, len(s.st.usages))
	for _, u := range s.st.usages {
		c := *u
		c.UserUsages = nil
		out = append(out, c)
	}
	return out
}
