package waldursim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// componentDefaults are the fields of an offering component as Waldur's
// OfferingComponentSerializer renders a new one.
func componentDefaults() map[string]any {
	return map[string]any{
		"description": "", "measured_unit": "", "unit_factor": int64(1), "limit_period": nil, "limit_amount": nil,
		"article_code": "", "max_value": nil, "min_value": nil, "max_available_limit": nil, "is_boolean": false,
		"default_limit": nil, "factor": nil, "is_builtin": false, "is_prepaid": false, "overage_component": nil,
		"min_prepaid_duration": nil, "max_prepaid_duration": nil, "prepaid_duration_step": nil,
		"min_renewal_duration": nil, "max_renewal_duration": nil, "renewal_duration_step": nil,
	}
}

var (
	billingTypes      = []string{"fixed", "usage", "limit", "one", "few"}
	limitPeriods      = []string{"annual", "month", "quarterly", "total"}
	prepaidOnlyFields = []string{"min_prepaid_duration", "max_prepaid_duration", "prepaid_duration_step",
		"min_renewal_duration", "max_renewal_duration", "renewal_duration_step"}
	// intComponentFields are the serializer's IntegerFields (null allowed).
	intComponentFields = append([]string{"limit_amount", "max_value", "min_value", "max_available_limit", "default_limit",
		"unit_factor"}, prepaidOnlyFields...)
)

// validateComponent checks body as OfferingComponentSerializer does and
// returns the attributes to store. partial is update_offering_component's
// partial=True: absent fields are neither required nor touched. Unknown
// fields are ignored, as DRF ignores them.
func validateComponent(body map[string]any, existing map[string]any, partial bool) (map[string]any, error) {
	fe := fieldErrors{}
	attrs := map[string]any{}
	for i, k := range []string{"billing_type", "type", "name", "measured_unit", "description", "article_code"} {
		// The first three are required (unless partial) and may not be blank.
		if s, ok := strField(body, fe, k, i < 3 && !partial, i >= 3); ok {
			attrs[k] = s
		}
	}
	if s, ok := attrs["billing_type"].(string); ok && !slices.Contains(billingTypes, s) {
		fe.add("billing_type", fmt.Sprintf("%q is not a valid choice.", s))
	}
	if v, present := body["limit_period"]; present {
		switch s, _ := v.(string); {
		case v == nil || s == "":
			attrs["limit_period"] = nil
		case slices.Contains(limitPeriods, s):
			attrs["limit_period"] = s
		default:
			fe.add("limit_period", fmt.Sprintf("%q is not a valid choice.", fmt.Sprint(v)))
		}
	}
	scalars := func(keys []string, read func(any) (any, bool), msg string) {
		for _, k := range keys {
			if v, present := body[k]; !present {
				continue
			} else if x, ok := read(v); ok {
				attrs[k] = x
			} else {
				fe.add(k, msg)
			}
		}
	}
	scalars(intComponentFields, drfInteger, "A valid integer is required.")
	scalars([]string{"is_boolean", "is_prepaid"}, func(v any) (any, bool) {
		b, ok := v.(bool)
		return b, ok
	}, "Must be a valid boolean.")
	if err := fe.err(); err != nil {
		return nil, err
	}
	// The serializer's validate(): a boolean component is 0..1 a month,
	// without a limit; duration constraints belong to prepaid components.
	if attrs["is_boolean"] == true {
		attrs["min_value"], attrs["max_value"], attrs["limit_period"], attrs["limit_amount"] = int64(0), int64(1), "month", nil
	}
	prepaid := existing["is_prepaid"] == true
	if v, ok := attrs["is_prepaid"]; ok {
		prepaid = v == true
	}
	if !prepaid {
		for _, k := range prepaidOnlyFields {
			if v, ok := attrs[k]; ok && v != nil {
				return nil, &apiError{Status: http.StatusBadRequest, Body: map[string][]string{k: {"This field can only be set on prepaid components."}}}
			}
		}
	}
	return attrs, nil
}

// drfInteger accepts what IntegerField(allow_null=True) accepts: null, an
// integral number, also written with a zero fraction (8.0), or a string of
// one.
func drfInteger(v any) (any, bool) {
	var s string
	switch x := v.(type) {
	case nil:
		return nil, true
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return nil, false
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && strings.Trim(s[i+1:], "0") == "" {
		s = s[:i]
	}
	n, err := json.Number(s).Int64()
	return n, err == nil
}

// createComponent is POST .../create_offering_component/: 201 without a
// body; a type the offering has is a 400 whose body is a bare list (the
// serializer's create raises it, outside field validation).
func createComponent(_ *http.Request, in req, off *Offering) (any, error) {
	attrs, err := validateComponent(in.body, nil, false)
	if err != nil {
		return nil, err
	}
	typ := attrs["type"].(string)
	if slices.ContainsFunc(off.Components, func(c map[string]any) bool { return c["type"] == typ }) {
		return nil, &apiError{Status: http.StatusBadRequest, Body: []string{fmt.Sprintf("Component %s already exists.", typ)}}
	}
	c := componentDefaults()
	maps.Copy(c, attrs)
	c["uuid"] = newUUID()
	off.Components = append(off.Components, c)
	return simkit.Reply{Status: http.StatusCreated}, nil
}

// updateComponent is POST .../update_offering_component/: the component
// named by the body's uuid, partially updated; 200 without a body, 404
// without one for a uuid the offering does not have.
func updateComponent(_ *http.Request, in req, off *Offering) (any, error) {
	raw, _ := in.body["uuid"].(string)
	if raw == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Body: map[string]string{"details": "UUID for offering component was not provided."}}
	}
	cid, _ := normUUID(raw)
	i := slices.IndexFunc(off.Components, func(c map[string]any) bool { return cid != "" && c["uuid"] == cid })
	if i < 0 {
		return simkit.Reply{Status: http.StatusNotFound}, nil
	}
	attrs, err := validateComponent(in.body, off.Components[i], true)
	if err != nil {
		return nil, err
	}
	maps.Copy(off.Components[i], attrs)
	return simkit.Reply{}, nil
}

// Components returns a copy of an offering's components as Waldur renders
// them (nil for an unknown offering).
func (s *Server) Components(offeringUUID string) []map[string]any {
	id, ok := normUUID(offeringUUID)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.st.offerings[id]
	if off == nil {
		return nil
	}
	return simkit.Map(off.Components, maps.Clone[map[string]any])
}

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
	f, err := json.Number(s).Float64()
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
	return simkit.Created(map[string]any{}), nil
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
