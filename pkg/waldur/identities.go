package waldur

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Dependency is one entry of AgentIdentityRequest.Dependencies.
type Dependency struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// AgentIdentityRequest is the body of identity create (POST) and update (PUT).
// The same body is sent in both cases, as the Python agent does.
type AgentIdentityRequest struct {
	Offering      string       `json:"offering"` // offering UUID
	Name          string       `json:"name"`     // by convention "agent-<offering_uuid>"
	Version       string       `json:"version"`
	LastRestarted time.Time    `json:"last_restarted"` // sent in UTC
	Dependencies  []Dependency `json:"dependencies"`
	// ConfigFilePath and ConfigFileContent are always sent, "" when unset.
	ConfigFilePath    string `json:"config_file_path"`
	ConfigFileContent string `json:"config_file_content"`
}

// AgentIdentity is a marketplace-site-agent-identities object.
type AgentIdentity struct {
	UUID              string          `json:"uuid"`
	URL               string          `json:"url,omitempty"`
	Name              string          `json:"name"`
	Offering          string          `json:"offering,omitempty"`
	Version           string          `json:"version,omitempty"`
	LastRestarted     *time.Time      `json:"last_restarted,omitempty"`
	Dependencies      json.RawMessage `json:"dependencies,omitempty"`
	ConfigFilePath    string          `json:"config_file_path,omitempty"`
	ConfigFileContent string          `json:"config_file_content,omitempty"`
	Created           *time.Time      `json:"created,omitempty"`
	Modified          *time.Time      `json:"modified,omitempty"`
}

// AgentService is a marketplace-site-agent-services object (one per agent mode).
type AgentService struct {
	UUID       string          `json:"uuid"`
	URL        string          `json:"url,omitempty"`
	Name       string          `json:"name"`
	Mode       string          `json:"mode"`
	State      string          `json:"state,omitempty"`
	Statistics json.RawMessage `json:"statistics,omitempty"`
	Created    *time.Time      `json:"created,omitempty"`
	Modified   *time.Time      `json:"modified,omitempty"`
}

// EventSubscription is returned by register_event_subscription; UUID and
// UserUUID identify the RabbitMQ/STOMP credentials of the agent.
type EventSubscription struct {
	UUID              string          `json:"uuid"`
	URL               string          `json:"url,omitempty"`
	UserUUID          string          `json:"user_uuid"`
	Description       string          `json:"description,omitempty"`
	ObservableObjects json.RawMessage `json:"observable_objects,omitempty"`
	Created           *time.Time      `json:"created,omitempty"`
}

// Queue is returned by create_queue (201 when new, 200 when it already existed).
type Queue struct {
	UUID                  string     `json:"uuid"`
	URL                   string     `json:"url,omitempty"`
	EventSubscription     string     `json:"event_subscription,omitempty"`
	EventSubscriptionUUID string     `json:"event_subscription_uuid,omitempty"`
	OfferingUUID          string     `json:"offering_uuid"`
	ObjectType            string     `json:"object_type"`
	QueueName             string     `json:"queue_name"`
	Vhost                 string     `json:"vhost"`
	Created               *time.Time `json:"created,omitempty"`
}

// User is the subset of /api/users/me/ the agent uses.
type User struct {
	UUID      string `json:"uuid"`
	URL       string `json:"url,omitempty"`
	Username  string `json:"username,omitempty"`
	FullName  string `json:"full_name,omitempty"`
	Email     string `json:"email,omitempty"`
	IsStaff   bool   `json:"is_staff,omitempty"`
	IsSupport bool   `json:"is_support,omitempty"`
}

// VersionInfo is /api/version/.
type VersionInfo struct {
	Version string `json:"version"`
}

const identities = "marketplace-site-agent-identities"

// ListAgentIdentities lists identities filtered by name.
func (c *Client) ListAgentIdentities(ctx context.Context, name string) ([]AgentIdentity, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	return list[AgentIdentity](ctx, c, "/api/"+identities+"/", q)
}

// CreateAgentIdentity creates an identity.
func (c *Client) CreateAgentIdentity(ctx context.Context, req AgentIdentityRequest) (*AgentIdentity, error) {
	var out AgentIdentity
	if err := c.do(ctx, http.MethodPost, "/api/"+identities+"/", nil, identityBody(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateAgentIdentity replaces an identity (PUT).
func (c *Client) UpdateAgentIdentity(ctx context.Context, uuid string, req AgentIdentityRequest) (*AgentIdentity, error) {
	p, err := objectPath(identities, uuid, "")
	if err != nil {
		return nil, err
	}
	var out AgentIdentity
	if err := c.do(ctx, http.MethodPut, p, nil, identityBody(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterAgentIdentity is the agent's start-up upsert: look the identity up
// by name and PUT it if it exists, otherwise POST it. A zero LastRestarted
// means now.
func (c *Client) RegisterAgentIdentity(ctx context.Context, req AgentIdentityRequest) (*AgentIdentity, error) {
	if req.Name == "" {
		return nil, fmt.Errorf("waldur: register agent identity: empty name")
	}
	found, err := c.ListAgentIdentities(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	// The name filter may match loosely; only an exact match is "ours".
	for _, id := range found {
		if id.Name == req.Name {
			c.log.DebugContext(ctx, "waldur: updating agent identity", "name", req.Name, "uuid", id.UUID)
			return c.UpdateAgentIdentity(ctx, id.UUID, req)
		}
	}
	c.log.DebugContext(ctx, "waldur: creating agent identity", "name", req.Name)
	return c.CreateAgentIdentity(ctx, req)
}

func identityBody(req AgentIdentityRequest) AgentIdentityRequest {
	if req.LastRestarted.IsZero() {
		req.LastRestarted = time.Now()
	}
	req.LastRestarted = req.LastRestarted.UTC()
	if req.Dependencies == nil {
		req.Dependencies = []Dependency{} // Waldur expects a list, not null
	}
	return req
}

// RegisterService registers (or re-registers) a service of an identity; the
// Python agent uses the mode as both name and mode.
func (c *Client) RegisterService(ctx context.Context, identityUUID, name, mode string) (*AgentService, error) {
	var out AgentService
	body := map[string]string{"name": name, "mode": mode}
	if err := c.post(ctx, identities, identityUUID, "register_service", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterEventSubscription creates (or returns) the identity's subscription
// for one observable object type.
func (c *Client) RegisterEventSubscription(ctx context.Context, identityUUID, objectType, description string) (*EventSubscription, error) {
	var out EventSubscription
	body := map[string]string{"observable_object_type": objectType, "description": description}
	if err := c.post(ctx, identities, identityUUID, "register_event_subscription", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateQueue creates the subscription's queue for an offering and object
// type; an existing queue (HTTP 200) is returned like a new one (201).
func (c *Client) CreateQueue(ctx context.Context, subscriptionUUID, offeringUUID, objectType string) (*Queue, error) {
	var out Queue
	body := map[string]string{"offering_uuid": offeringUUID, "object_type": objectType}
	if err := c.post(ctx, "event-subscriptions", subscriptionUUID, "create_queue", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListEventSubscriptions lists the event subscriptions of the token's
// user (Waldur shows a user only their own).
func (c *Client) ListEventSubscriptions(ctx context.Context) ([]EventSubscription, error) {
	return list[EventSubscription](ctx, c, "/api/event-subscriptions/", nil)
}

// Me returns the authenticated user; readiness probes pass fields "uuid".
func (c *Client) Me(ctx context.Context, fields ...string) (*User, error) {
	var out User
	if err := c.do(ctx, http.MethodGet, "/api/users/me/", fieldsQuery(nil, fields), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Version returns Waldur's version.
func (c *Client) Version(ctx context.Context) (*VersionInfo, error) {
	var out VersionInfo
	if err := c.do(ctx, http.MethodGet, "/api/version/", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
