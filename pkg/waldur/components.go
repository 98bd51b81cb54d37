package waldur

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ComponentRequest is the body of create_offering_component and
// update_offering_component as the Python agent's load_components_to_waldur
// sends it: billing_type (the configured accounting_type), type (the
// component's key), name (its label), measured_unit and limit_amount
// (null when no limit is configured), plus the optional offering-component
// fields the configuration sets (description, min_value, limit_period,
// is_prepaid, ...), each only when set.
type ComponentRequest struct {
	// UUID names the component to update; empty for a create.
	UUID         string
	BillingType  string
	Type         string
	Name         string
	MeasuredUnit string
	LimitAmount  *float64
	// Optional are the further fields, by their Waldur names.
	Optional map[string]any
}

// Fields returns the request as the JSON object it is sent as.
func (r ComponentRequest) Fields() map[string]any {
	m := make(map[string]any, len(r.Optional)+6)
	maps.Copy(m, r.Optional)
	if r.UUID != "" {
		m["uuid"] = r.UUID
	}
	m["billing_type"] = r.BillingType
	m["type"] = r.Type
	m["name"] = r.Name
	m["measured_unit"] = r.MeasuredUnit
	if r.LimitAmount != nil {
		m["limit_amount"] = *r.LimitAmount
	} else {
		m["limit_amount"] = nil
	}
	return m
}

// MarshalJSON implements json.Marshaler.
func (r ComponentRequest) MarshalJSON() ([]byte, error) { return json.Marshal(r.Fields()) }

// Differs lists the fields of r whose value differs from what Waldur shows
// for the existing component c (sorted by name). Fields r does not send are
// not compared: update_offering_component is a partial update and leaves
// them as they are.
func (r ComponentRequest) Differs(c OfferingComponent) []string {
	var out []string
	for k, want := range r.Fields() {
		if k == "uuid" {
			continue
		}
		if !sameJSONValue(want, c.Fields[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sameJSONValue compares two values as JSON sees them: numbers by value
// (Waldur renders limit_amount 10 for a 10.0 sent), null equal to an absent
// field.
func sameJSONValue(a, b any) bool {
	na, aNum := number(a)
	nb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && na == nb
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// UnmarshalJSON keeps every field Waldur sent in Fields besides the typed
// ones, so a caller can compare fields this package does not type.
func (c *OfferingComponent) UnmarshalJSON(data []byte) error {
	type plain OfferingComponent
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	*c = OfferingComponent(p)
	c.Fields = all
	return nil
}

const providerOfferings = "marketplace-provider-offerings"

// OfferingComponents returns an offering's components
// (GET .../marketplace-provider-offerings/{uuid}/?field=components, as the
// Python agent reads them).
func (c *Client) OfferingComponents(ctx context.Context, offeringUUID string) ([]OfferingComponent, error) {
	o, err := c.GetOffering(ctx, offeringUUID, "components")
	if err != nil {
		return nil, err
	}
	return o.Components, nil
}

// CreateOfferingComponent adds a component to an offering (Waldur answers
// 201 without a body; a type the offering has already is a 400).
func (c *Client) CreateOfferingComponent(ctx context.Context, offeringUUID string, req ComponentRequest) error {
	if req.UUID != "" {
		return fmt.Errorf("waldur: create offering component %q: a new component has no uuid", req.Type)
	}
	return c.post(ctx, providerOfferings, offeringUUID, "create_offering_component", req, nil)
}

// UpdateOfferingComponent changes the component req.UUID of an offering
// (200 without a body; an unknown uuid is a 404).
func (c *Client) UpdateOfferingComponent(ctx context.Context, offeringUUID string, req ComponentRequest) error {
	if strings.TrimSpace(req.UUID) == "" {
		return fmt.Errorf("waldur: update offering component %q: the component's uuid is required", req.Type)
	}
	return c.post(ctx, providerOfferings, offeringUUID, "update_offering_component", req, nil)
}
