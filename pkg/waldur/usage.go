package waldur

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ComponentUsage is one component's total in a set_usage request.
type ComponentUsage struct {
	Type   string
	Amount float64 // sent as a string with two decimals ("%.2f"), as Waldur expects
}

// MarshalJSON renders Amount as "%.2f" so callers cannot get the wire format wrong.
func (u ComponentUsage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type   string `json:"type"`
		Amount string `json:"amount"`
	}{u.Type, formatAmount(u.Amount)})
}

// SetUsageRequest reports a resource's usage for the billing period that
// contains Date (the Python agent sends the first of the month).
type SetUsageRequest struct {
	Usages   []ComponentUsage `json:"usages"`
	Resource string           `json:"resource"` // resource UUID, sent as given
	Date     time.Time        `json:"date"`
}

// ComponentUsageRecord is an existing marketplace-component-usages entry.
// Usage is a decimal; Waldur sends it as a string, json.Number accepts both.
type ComponentUsageRecord struct {
	UUID          string      `json:"uuid"`
	ResourceUUID  string      `json:"resource_uuid,omitempty"`
	Type          string      `json:"type"`
	Usage         json.Number `json:"usage"`
	BillingPeriod string      `json:"billing_period,omitempty"` // YYYY-MM-DD
	Date          *time.Time  `json:"date,omitempty"`
}

// ListComponentUsages lists the usages of a resource in the month of
// billingPeriod (fields uuid, type, usage, like the Python report loop).
func (c *Client) ListComponentUsages(ctx context.Context, resourceUUID string, billingPeriod time.Time) ([]ComponentUsageRecord, error) {
	q := url.Values{}
	q.Set("resource_uuid", resourceUUID)
	q.Set("billing_period", billingPeriod.Format("2006-01")+"-01")
	q = fieldsQuery(q, []string{"uuid", "type", "usage"})
	return list[ComponentUsageRecord](ctx, c, "/api/marketplace-component-usages/", q)
}

// ListOfferingComponentUsages lists the usages of every resource of an
// offering in the month of billingPeriod (fields uuid, resource_uuid, type,
// usage): one paged list instead of one call per resource, which is what
// the Python agent's report loop costs.
func (c *Client) ListOfferingComponentUsages(ctx context.Context, offeringUUID string, billingPeriod time.Time) ([]ComponentUsageRecord, error) {
	q := url.Values{}
	q.Set("offering_uuid", offeringUUID)
	q.Set("billing_period", billingPeriod.Format("2006-01")+"-01")
	q = fieldsQuery(q, []string{"uuid", "resource_uuid", "type", "usage"})
	return list[ComponentUsageRecord](ctx, c, "/api/marketplace-component-usages/", q)
}

// SetUsage reports component usages of a resource.
func (c *Client) SetUsage(ctx context.Context, req SetUsageRequest) error {
	if req.Usages == nil {
		req.Usages = []ComponentUsage{}
	}
	return c.do(ctx, http.MethodPost, "/api/marketplace-component-usages/set_usage/", nil, req, nil)
}

// formatAmount matches Python's "%.2f".
func formatAmount(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
