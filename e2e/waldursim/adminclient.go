package waldursim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// AdminClient drives a simulator's /sim/ admin API, so e2e tests (which may
// run the simulator as a separate process) need not hand-write JSON.
type AdminClient struct {
	BaseURL string
	HTTP    *http.Client
}

// NewAdminClient returns a client for the simulator at baseURL.
func NewAdminClient(baseURL string) *AdminClient {
	return &AdminClient{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// AdminError is a non-2xx admin API answer. For 502 (publishing failed)
// the operation itself happened and the typed result is filled in too.
type AdminError struct {
	Status int
	Body   string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("waldursim admin: HTTP %d: %s", e.Status, e.Body)
}

func (c *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && (resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusBadGateway) {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("waldursim admin %s %s: decode: %w", method, path, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		return &AdminError{Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	return nil
}

// CreateOrder creates an order (POST /sim/orders).
func (c *AdminClient) CreateOrder(ctx context.Context, req CreateOrderRequest) (*CreateOrderResult, error) {
	var out CreateOrderResult
	return &out, c.do(ctx, http.MethodPost, "/sim/orders", req, &out)
}

// Order fetches the full order, including state and error_message.
func (c *AdminClient) Order(ctx context.Context, uuid string) (*APIOrder, error) {
	var out APIOrder
	return &out, c.do(ctx, http.MethodGet, "/sim/orders/"+uuid, nil, &out)
}

// Resource fetches the full resource, including membership sync statuses.
func (c *AdminClient) Resource(ctx context.Context, uuid string) (*APIResource, error) {
	var out APIResource
	return &out, c.do(ctx, http.MethodGet, "/sim/resources/"+uuid, nil, &out)
}

// WaitOrder polls until the order is in one of states or ctx ends.
func (c *AdminClient) WaitOrder(ctx context.Context, uuid string, states ...string) (*APIOrder, error) {
	for {
		o, err := c.Order(ctx, uuid)
		if err == nil && slices.Contains(states, o.State) {
			return o, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("order %s is %q, want one of %v: %w", uuid, o.State, states, ctx.Err())
			}
			return o, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// SetFlags changes resource flags (POST /sim/resources/{uuid}/flags).
func (c *AdminClient) SetFlags(ctx context.Context, resourceUUID string, req FlagsRequest) (*FlagsResult, error) {
	var out FlagsResult
	return &out, c.do(ctx, http.MethodPost, "/sim/resources/"+resourceUUID+"/flags", req, &out)
}

// SetTeam grants or revokes a team role (POST /sim/team).
func (c *AdminClient) SetTeam(ctx context.Context, req TeamRequest) (*TeamResult, error) {
	var out TeamResult
	return &out, c.do(ctx, http.MethodPost, "/sim/team", req, &out)
}

// PublishRaw sends a raw frame (POST /sim/events).
func (c *AdminClient) PublishRaw(ctx context.Context, req RawEventRequest) (*EventResult, error) {
	var out EventResult
	return &out, c.do(ctx, http.MethodPost, "/sim/events", req, &out)
}

// Calls returns the /api/ call log.
func (c *AdminClient) Calls(ctx context.Context) ([]Call, error) {
	var out []Call
	return out, c.do(ctx, http.MethodGet, "/sim/calls", nil, &out)
}

// ResetCalls clears the call log.
func (c *AdminClient) ResetCalls(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/sim/calls", nil, nil)
}

// AddFault injects a fault.
func (c *AdminClient) AddFault(ctx context.Context, f Fault) error {
	return c.do(ctx, http.MethodPost, "/sim/faults", f, nil)
}

// ClearFaults removes injected faults.
func (c *AdminClient) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/sim/faults", nil, nil)
}

// Subscriptions lists event subscriptions and their queues.
func (c *AdminClient) Subscriptions(ctx context.Context) ([]SubscriptionInfo, error) {
	var out []SubscriptionInfo
	return out, c.do(ctx, http.MethodGet, "/sim/subscriptions", nil, &out)
}
