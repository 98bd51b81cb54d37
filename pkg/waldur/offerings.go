package waldur

import (
	"context"
	"encoding/json"
	"net/url"
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

// ServiceProvider is a marketplace-service-providers object.
type ServiceProvider struct {
	UUID         string `json:"uuid"`
	URL          string `json:"url,omitempty"`
	CustomerUUID string `json:"customer_uuid,omitempty"`
	CustomerName string `json:"customer_name,omitempty"`
}

// Plan is a marketplace-plans object; Quotas gives limits for plan-based orders.
type Plan struct {
	UUID        string             `json:"uuid"`
	URL         string             `json:"url,omitempty"`
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Unit        string             `json:"unit,omitempty"`
	Archived    bool               `json:"archived,omitempty"`
	Quotas      map[string]float64 `json:"quotas,omitempty"`
	Prices      json.RawMessage    `json:"prices,omitempty"`
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

// ListServiceProviders lists the service providers of a customer (the agent
// uses the first).
func (c *Client) ListServiceProviders(ctx context.Context, customerUUID string) ([]ServiceProvider, error) {
	q := url.Values{}
	if customerUUID != "" {
		q.Set("customer_uuid", customerUUID)
	}
	return list[ServiceProvider](ctx, c, "/api/marketplace-service-providers/", q)
}

// GetPlan fetches a plan.
func (c *Client) GetPlan(ctx context.Context, uuid string) (*Plan, error) {
	var out Plan
	if err := c.get(ctx, "marketplace-plans", uuid, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
