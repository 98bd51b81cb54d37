package waldursim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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

// decimalField accepts "12.50" or 12.5 and renders Waldur's two decimals.
func decimalField(m map[string]any, fe fieldErrors, key string) string {
	var s string
	switch x := m[key].(type) {
	case nil:
		fe.add(key, "This field is required.")
		return ""
	case json.Number:
		s = string(x)
	case string:
		s = x
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		fe.add(key, "A valid number is required.")
	case f < 0:
		fe.add(key, "Ensure this value is greater than or equal to 0.")
	default:
		return fmt.Sprintf("%.2f", f)
	}
	return ""
}

var usageFilters = []filter[ComponentUsage]{
	byUUID("resource_uuid", func(v ComponentUsage) string { return v.ResourceUUID }),
	byUUID("offering_uuid", func(v ComponentUsage) string { return v.OfferingUUID }),
	byPeriod("billing_period", func(v ComponentUsage) string { return v.BillingPeriod }),
}

func usageView(base string, u *ComponentUsage) ComponentUsage {
	v := *u
	v.URL = base + "/api/marketplace-component-usages/" + u.UUID + "/"
	return v
}

func (s *Server) setUsage(_ *http.Request, in req) (any, error) {
	fe := fieldErrors{}
	resID, okRes := uuidField(in.body, fe, "resource", true)
	date, okDate := strField(in.body, fe, "date", false, false)
	period, ok := billingPeriod(date)
	if okDate && !ok {
		fe.add("date", "Datetime has wrong format.")
	}
	if !okDate {
		date = s.now()
		period, _ = billingPeriod(date)
	}
	res := s.st.resources.Get(resID)
	if okRes && res == nil {
		fe.add("resource", "Invalid pk \""+resID+"\" - object does not exist.")
	}
	type entry struct{ typ, amount string }
	var entries []entry
	eachDict(in.body, fe, "usages", func(m map[string]any, ef fieldErrors) {
		typ, okT := strField(m, ef, "type", true, false)
		amount := decimalField(m, ef, "amount")
		if okT && res != nil && s.component(res.Offering, typ) == nil {
			fe.add("usages", fmt.Sprintf("Component %q is not found.", typ))
		}
		entries = append(entries, entry{typ, amount})
	})
	if err := fe.err(); err != nil {
		return nil, err
	}
	for _, e := range entries {
		comp := s.component(res.Offering, e.typ)
		u := s.st.usages.Find(func(x *ComponentUsage) bool {
			return x.ResourceUUID == res.UUID && x.Type == e.typ && x.BillingPeriod == period
		})
		if u == nil {
			u = &ComponentUsage{UUID: newUUID(), ResourceUUID: res.UUID, ResourceName: res.Name,
				OfferingUUID: res.Offering, Type: e.typ, BillingPeriod: period, Created: s.now()}
			u.Name, _ = comp["name"].(string)
			u.MeasuredUnit, _ = comp["measured_unit"].(string)
			s.st.usages.Put(u.UUID, u)
		}
		u.Usage, u.Date, u.Modified = e.amount, date, s.now()
	}
	return created(map[string]any{}), nil
}

// component finds an offering component by type. Caller holds s.mu.
func (s *Server) component(offering, typ string) map[string]any {
	off := s.st.offerings[offering]
	if off == nil {
		return nil
	}
	i := slices.IndexFunc(off.Components, func(c map[string]any) bool { return c["type"] == typ })
	if i < 0 {
		return nil
	}
	return off.Components[i]
}

// Usages returns a copy of the component usages Waldur holds, in the order
// they were first set (tests compare them with what the agent measured).
func (s *Server) Usages() []ComponentUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return simkit.Map(s.st.usages.List(nil), func(u *ComponentUsage) ComponentUsage { return *u })
}
