package waldur

import (
	"context"
	"encoding/json"
)

// Offering is a marketplace-provider-offerings object. Only fields the agent
// reads are typed; request a subset with GetOffering's fields.
type Offering struct {
	UUID          string              `json:"uuid"`
	URL           string              `json:"url,omitempty"`
	Name          string              `json:"name"`
	State         string              `json:"state,omitempty"`
	Type          string              `json:"type,omitempty"`
	BackendID     string              `json:"backend_id,omitempty"`
	CustomerUUID  string              `json:"customer_uuid,omitempty"`
	CustomerName  string              `json:"customer_name,omitempty"`
	Components    []OfferingComponent `json:"components,omitempty"`
	Partitions    json.RawMessage     `json:"partitions,omitempty"`
	PluginOptions map[string]any      `json:"plugin_options,omitempty"`
}

// OfferingComponent is an accounting component of an offering. Numeric
// settings are pointers because Waldur sends null for "not set".
type OfferingComponent struct {
	UUID              string   `json:"uuid,omitempty"`
	Type              string   `json:"type"`
	Name              string   `json:"name"`
	Description       string   `json:"description,omitempty"`
	MeasuredUnit      string   `json:"measured_unit,omitempty"`
	BillingType       string   `json:"billing_type,omitempty"` // usage | limit | one | few | fixed
	LimitPeriod       string   `json:"limit_period,omitempty"`
	LimitAmount       *float64 `json:"limit_amount,omitempty"`
	UnitFactor        *float64 `json:"unit_factor,omitempty"`
	ArticleCode       string   `json:"article_code,omitempty"`
	MinValue          *float64 `json:"min_value,omitempty"`
	MaxValue          *float64 `json:"max_value,omitempty"`
	MaxAvailableLimit *float64 `json:"max_available_limit,omitempty"`
	DefaultLimit      *float64 `json:"default_limit,omitempty"`
	IsBoolean         bool     `json:"is_boolean,omitempty"`
	IsPrepaid         bool     `json:"is_prepaid,omitempty"`
	// Fields are all fields as Waldur sent them (set when decoded), for
	// comparing fields not typed here.
	Fields map[string]any `json:"-"`
}

// GetOffering fetches a provider offering; fields (repeated field= params)
// limit the answer, e.g. "components", "customer_uuid", "partitions",
// "plugin_options".
func (c *Client) GetOffering(ctx context.Context, uuid string, fields ...string) (*Offering, error) {
	var out Offering
	if err := c.get(ctx, "marketplace-provider-offerings", uuid, fields, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
