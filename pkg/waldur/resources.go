package waldur

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Resource states in Waldur.
const (
	ResourceStateCreating    = "Creating"
	ResourceStateOK          = "OK"
	ResourceStateErred       = "Erred"
	ResourceStateUpdating    = "Updating"
	ResourceStateTerminating = "Terminating"
	ResourceStateTerminated  = "Terminated"
)

// Resource is a marketplace-provider-resources object.
type Resource struct {
	UUID                  string             `json:"uuid"`
	URL                   string             `json:"url,omitempty"`
	Name                  string             `json:"name"`
	Slug                  string             `json:"slug,omitempty"`
	State                 string             `json:"state,omitempty"`
	BackendID             string             `json:"backend_id,omitempty"`
	EffectiveID           string             `json:"effective_id,omitempty"`
	OfferingUUID          string             `json:"offering_uuid,omitempty"`
	OfferingBackendID     string             `json:"offering_backend_id,omitempty"`
	OfferingPluginOptions map[string]any     `json:"offering_plugin_options,omitempty"`
	PlanUUID              string             `json:"plan_uuid,omitempty"`
	ProjectUUID           string             `json:"project_uuid,omitempty"`
	ProjectSlug           string             `json:"project_slug,omitempty"`
	ProjectName           string             `json:"project_name,omitempty"`
	ProjectDescription    string             `json:"project_description,omitempty"`
	ProjectEndDate        string             `json:"project_end_date,omitempty"` // YYYY-MM-DD
	CustomerUUID          string             `json:"customer_uuid,omitempty"`
	CustomerSlug          string             `json:"customer_slug,omitempty"`
	CustomerName          string             `json:"customer_name,omitempty"`
	Limits                map[string]float64 `json:"limits,omitempty"`
	Attributes            json.RawMessage    `json:"attributes,omitempty"`
	Paused                bool               `json:"paused,omitempty"`
	Downscaled            bool               `json:"downscaled,omitempty"`
	RestrictMemberAccess  bool               `json:"restrict_member_access,omitempty"`
	BackendMetadata       map[string]any     `json:"backend_metadata,omitempty"`
	EndDate               string             `json:"end_date,omitempty"` // YYYY-MM-DD
	EndDateUpdatedAt      *time.Time         `json:"end_date_updated_at,omitempty"`
	ErrorMessage          string             `json:"error_message,omitempty"`
	Created               *time.Time         `json:"created,omitempty"`
	Modified              *time.Time         `json:"modified,omitempty"`
}

// ResourceFilter selects provider resources.
type ResourceFilter struct {
	OfferingUUID string
	ProjectUUID  string
	BackendID    string   // backend_id=, exact
	States       []string // repeated state= params, e.g. OK, Erred
	Fields       []string // repeated field= params
	// DropEmptyBackendID removes resources without a backend_id, as the
	// Python membership and report loops do (they cannot act on them).
	DropEmptyBackendID bool
}

// ProjectUser is one member of a resource's project team.
type ProjectUser struct {
	UUID                 string     `json:"uuid"`
	URL                  string     `json:"url,omitempty"`
	Username             string     `json:"username"`
	FullName             string     `json:"full_name,omitempty"`
	Email                string     `json:"email,omitempty"`
	Role                 string     `json:"role"` // e.g. PROJECT.ADMIN, PROJECT.MANAGER, PROJECT.MEMBER
	OfferingUserUsername string     `json:"offering_user_username,omitempty"`
	OfferingUserState    string     `json:"offering_user_state,omitempty"`
	ExpirationTime       *time.Time `json:"expiration_time,omitempty"`
}

// Endpoint is an access URL shown to the customer.
type Endpoint struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

const resources = "marketplace-provider-resources"

// GetResource fetches a provider resource; fields limit the answer.
func (c *Client) GetResource(ctx context.Context, uuid string, fields ...string) (*Resource, error) {
	var out Resource
	if err := c.get(ctx, resources, uuid, fields, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListProviderResources lists provider resources across all pages.
func (c *Client) ListProviderResources(ctx context.Context, f ResourceFilter) ([]Resource, error) {
	q := url.Values{}
	if f.OfferingUUID != "" {
		q.Set("offering_uuid", f.OfferingUUID)
	}
	if f.ProjectUUID != "" {
		q.Set("project_uuid", f.ProjectUUID)
	}
	if f.BackendID != "" {
		q.Set("backend_id", f.BackendID)
	}
	for _, s := range f.States {
		q.Add("state", s)
	}
	fields := f.Fields
	if f.DropEmptyBackendID && len(fields) > 0 && !slices.Contains(fields, "backend_id") {
		// Without the field every resource would look unprovisioned.
		fields = append(slices.Clip(fields), "backend_id")
	}
	q = fieldsQuery(q, fields)
	res, err := list[Resource](ctx, c, "/api/"+resources+"/", q)
	if err != nil || !f.DropEmptyBackendID {
		return res, err
	}
	return slices.DeleteFunc(res, func(r Resource) bool { return r.BackendID == "" }), nil
}

// GetResourceTeam lists the project members of a resource. hasConsent, when
// non-nil, is sent as has_consent=true|false.
func (c *Client) GetResourceTeam(ctx context.Context, uuid string, hasConsent *bool) ([]ProjectUser, error) {
	p, err := objectPath(resources, uuid, "team")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if hasConsent != nil {
		q.Set("has_consent", strconv.FormatBool(*hasConsent))
	}
	return list[ProjectUser](ctx, c, p, q)
}

// SetResourceBackendID records the backend's id of a resource.
func (c *Client) SetResourceBackendID(ctx context.Context, uuid, backendID string) error {
	return c.post(ctx, resources, uuid, "set_backend_id", map[string]string{"backend_id": backendID}, nil)
}

// SetResourceLimits reports the limits actually applied in the backend.
func (c *Client) SetResourceLimits(ctx context.Context, uuid string, limits map[string]int64) error {
	if limits == nil {
		limits = map[string]int64{}
	}
	return c.post(ctx, resources, uuid, "set_limits", map[string]any{"limits": limits}, nil)
}

// SetResourceBackendMetadata stores backend-specific details shown in Waldur.
func (c *Client) SetResourceBackendMetadata(ctx context.Context, uuid string, metadata map[string]any) error {
	if metadata == nil {
		metadata = map[string]any{}
	}
	return c.post(ctx, resources, uuid, "set_backend_metadata", map[string]any{"backend_metadata": metadata}, nil)
}

// SetResourceEndpoints replaces the resource's access endpoints.
func (c *Client) SetResourceEndpoints(ctx context.Context, uuid string, endpoints []Endpoint) error {
	if endpoints == nil {
		endpoints = []Endpoint{}
	}
	return c.post(ctx, resources, uuid, "set_endpoints", map[string]any{"endpoints": endpoints}, nil)
}

// SetResourceErred marks a resource Erred with a message for the customer.
func (c *Client) SetResourceErred(ctx context.Context, uuid, message, traceback string) error {
	body := map[string]string{"error_message": message, "error_traceback": traceback}
	return c.post(ctx, resources, uuid, "set_as_erred", body, nil)
}

// SetResourceOK marks a previously Erred resource OK after a successful sync.
func (c *Client) SetResourceOK(ctx context.Context, uuid string) error {
	return c.post(ctx, resources, uuid, "set_as_ok", nil, nil)
}
