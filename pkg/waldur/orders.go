package waldur

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Order types (RequestTypes in Waldur).
const (
	OrderTypeCreate    = "Create"
	OrderTypeUpdate    = "Update"
	OrderTypeTerminate = "Terminate"
	OrderTypeRestore   = "Restore"
)

// Order states (OrderState in Waldur).
const (
	OrderStatePendingConsumer  = "pending-consumer"
	OrderStatePendingProvider  = "pending-provider"
	OrderStatePendingProject   = "pending-project"
	OrderStatePendingStartDate = "pending-start-date"
	OrderStateExecuting        = "executing"
	OrderStateDone             = "done"
	OrderStateErred            = "erred"
	OrderStateCanceled         = "canceled"
	OrderStateRejected         = "rejected"
)

// Order is a marketplace-orders object.
type Order struct {
	UUID                    string             `json:"uuid"`
	URL                     string             `json:"url,omitempty"`
	Type                    string             `json:"type"`
	State                   string             `json:"state"`
	ResourceUUID            string             `json:"resource_uuid,omitempty"`
	MarketplaceResourceUUID string             `json:"marketplace_resource_uuid,omitempty"`
	ResourceName            string             `json:"resource_name,omitempty"`
	OfferingUUID            string             `json:"offering_uuid,omitempty"`
	OfferingName            string             `json:"offering_name,omitempty"`
	ProjectUUID             string             `json:"project_uuid,omitempty"`
	ProjectSlug             string             `json:"project_slug,omitempty"`
	ProjectName             string             `json:"project_name,omitempty"`
	CustomerUUID            string             `json:"customer_uuid,omitempty"`
	CustomerSlug            string             `json:"customer_slug,omitempty"`
	CustomerName            string             `json:"customer_name,omitempty"`
	PlanUUID                string             `json:"plan_uuid,omitempty"`
	Limits                  map[string]float64 `json:"limits,omitempty"`
	Attributes              json.RawMessage    `json:"attributes,omitempty"`
	CreatedByUsername       string             `json:"created_by_username,omitempty"`
	CreatedByFullName       string             `json:"created_by_full_name,omitempty"`
	CreatedByEmail          string             `json:"created_by_email,omitempty"`
	Created                 time.Time          `json:"created"`
	Modified                time.Time          `json:"modified"`
	ErrorMessage            string             `json:"error_message,omitempty"`
	ErrorTraceback          string             `json:"error_traceback,omitempty"`
	BackendID               string             `json:"backend_id,omitempty"`
}

// OrderFilter selects orders for ListOrders. Empty fields are not sent.
type OrderFilter struct {
	OfferingUUID string
	// States are sent as repeated state= params, e.g. pending-provider, executing.
	States []string
	// ModifiedBefore finds orders stuck since then (periodic reconciliation).
	ModifiedBefore time.Time
}

const orders = "marketplace-orders"

// ListOrders lists orders across all pages.
func (c *Client) ListOrders(ctx context.Context, f OrderFilter) ([]Order, error) {
	q := url.Values{}
	if f.OfferingUUID != "" {
		q.Set("offering_uuid", f.OfferingUUID)
	}
	for _, s := range f.States {
		q.Add("state", s)
	}
	if !f.ModifiedBefore.IsZero() {
		q.Set("modified_before", f.ModifiedBefore.UTC().Format(time.RFC3339))
	}
	return list[Order](ctx, c, "/api/"+orders+"/", q)
}

// GetOrder fetches an order; fields (e.g. "uuid", "state") limit the answer.
func (c *Client) GetOrder(ctx context.Context, uuid string, fields ...string) (*Order, error) {
	var out Order
	if err := c.get(ctx, orders, uuid, fields, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApproveOrderByProvider moves a pending-provider order to executing.
func (c *Client) ApproveOrderByProvider(ctx context.Context, uuid string) error {
	return c.post(ctx, orders, uuid, "approve_by_provider", struct{}{}, nil)
}

// SetOrderStateDone completes an executing order (no request body).
func (c *Client) SetOrderStateDone(ctx context.Context, uuid string) error {
	return c.post(ctx, orders, uuid, "set_state_done", nil, nil)
}

// SetOrderStateErred fails an order with a message shown to the customer.
func (c *Client) SetOrderStateErred(ctx context.Context, uuid, message, traceback string) error {
	body := map[string]string{"error_message": message, "error_traceback": traceback}
	return c.post(ctx, orders, uuid, "set_state_erred", body, nil)
}
