package waldursim

import "github.com/sitebus/sitebus/e2e/simkit"

// Scope is an order's or a resource's offering, project and customer, as
// both render them.
type Scope struct {
	Offering     string `json:"offering"`
	OfferingUUID string `json:"offering_uuid"`
	OfferingName string `json:"offering_name"`
	OfferingType string `json:"offering_type"`
	ProjectUUID  string `json:"project_uuid"`
	ProjectName  string `json:"project_name"`
	ProjectSlug  string `json:"project_slug"`
	CustomerUUID string `json:"customer_uuid"`
	CustomerName string `json:"customer_name"`
	CustomerSlug string `json:"customer_slug"`
}

// APIOrder is an order as GET /api/marketplace-orders/{uuid}/ renders it.
type APIOrder struct {
	UUID                    string `json:"uuid"`
	URL                     string `json:"url"`
	Type                    string `json:"type"`
	State                   string `json:"state"`
	ResourceUUID            string `json:"resource_uuid"`
	MarketplaceResourceUUID string `json:"marketplace_resource_uuid"`
	ResourceName            string `json:"resource_name"`
	Scope
	PlanUUID       *string        `json:"plan_uuid"`
	Limits         map[string]int `json:"limits"`
	Attributes     map[string]any `json:"attributes"`
	BackendID      string         `json:"backend_id"`
	ErrorMessage   string         `json:"error_message"`
	ErrorTraceback string         `json:"error_traceback"`
	Created        string         `json:"created"`
	Modified       string         `json:"modified"`
	CompletedAt    *string        `json:"completed_at"`
}

// APIResource is a resource as GET /api/marketplace-provider-resources/{uuid}/
// renders it.
type APIResource struct {
	UUID      string `json:"uuid"`
	URL       string `json:"url"`
	Name      string `json:"name"`
	Slug      string `json:"slug"`
	State     string `json:"state"`
	BackendID string `json:"backend_id"`
	Scope
	OfferingBackendID    string           `json:"offering_backend_id"`
	OfferingPluginOpts   map[string]any   `json:"offering_plugin_options"`
	Project              string           `json:"project"`
	ProjectDescription   string           `json:"project_description"`
	ProjectEndDate       *string          `json:"project_end_date"`
	PlanUUID             *string          `json:"plan_uuid"`
	Limits               map[string]int   `json:"limits"`
	Attributes           map[string]any   `json:"attributes"`
	BackendMetadata      map[string]any   `json:"backend_metadata"`
	Endpoints            []map[string]any `json:"endpoints"`
	Paused               bool             `json:"paused"`
	Downscaled           bool             `json:"downscaled"`
	RestrictMemberAccess bool             `json:"restrict_member_access"`
	EndDate              *string          `json:"end_date"`
	EndDateUpdatedAt     *string          `json:"end_date_updated_at"`
	LastSync             *string          `json:"last_sync"` // always null: sitebus never calls refresh_last_sync
	ErrorMessage         string           `json:"error_message"`
	ErrorTraceback       string           `json:"error_traceback"`
	Created              string           `json:"created"`
	Modified             string           `json:"modified"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (st *state) scope(base string, r *Resource) Scope {
	var v Scope
	if off := st.offerings[r.Offering]; off != nil {
		v.Offering = base + "/api/marketplace-provider-offerings/" + off.UUID + "/"
		v.OfferingUUID, v.OfferingName, v.OfferingType = off.UUID, off.Name, off.Type
	}
	if p := st.projects[r.Project]; p != nil {
		v.ProjectUUID, v.ProjectName, v.ProjectSlug = p.UUID, p.Name, p.Slug
		if c := st.customers[p.CustomerUUID]; c != nil {
			v.CustomerUUID, v.CustomerName, v.CustomerSlug = c.UUID, c.Name, c.Slug
		}
	}
	return v
}

func (st *state) orderView(base string, o *Order) APIOrder {
	v := APIOrder{
		UUID: o.UUID, URL: base + "/api/marketplace-orders/" + o.UUID + "/",
		Type: o.Type, State: o.State, ResourceUUID: o.Resource, MarketplaceResourceUUID: o.Resource,
		PlanUUID: strPtr(o.Plan), Limits: simkit.CloneOrEmpty(o.Limits), Attributes: simkit.CloneOrEmpty(o.Attributes), BackendID: o.BackendID,
		ErrorMessage: o.ErrorMessage, ErrorTraceback: o.ErrorTraceback,
		Created: o.Created, Modified: o.Modified, CompletedAt: strPtr(o.CompletedAt),
	}
	if r := st.resources.Get(o.Resource); r != nil {
		v.ResourceName, v.Scope = r.Name, st.scope(base, r)
	}
	return v
}

func (st *state) resourceView(base string, r *Resource) APIResource {
	v := APIResource{
		UUID: r.UUID, URL: base + "/api/marketplace-provider-resources/" + r.UUID + "/",
		Name: r.Name, Slug: r.Slug, State: r.State, BackendID: r.BackendID, Scope: st.scope(base, r),
		PlanUUID: strPtr(r.Plan), Limits: simkit.CloneOrEmpty(r.Limits), Attributes: simkit.CloneOrEmpty(r.Attributes),
		BackendMetadata: simkit.CloneOrEmpty(r.BackendMetadata), Endpoints: append([]map[string]any{}, r.Endpoints...),
		Paused: r.Paused, Downscaled: r.Downscaled, RestrictMemberAccess: r.RestrictMemberAccess,
		EndDate:      strPtr(r.EndDate),
		ErrorMessage: r.ErrorMessage, ErrorTraceback: r.ErrorTraceback,
		Created: r.Created, Modified: r.Modified,
	}
	if off := st.offerings[r.Offering]; off != nil {
		v.OfferingBackendID, v.OfferingPluginOpts = off.BackendID, simkit.CloneOrEmpty(off.PluginOptions)
	}
	if p := st.projects[r.Project]; p != nil {
		v.Project = base + "/api/projects/" + p.UUID + "/"
		v.ProjectDescription, v.ProjectEndDate = p.Description, strPtr(p.EndDate)
	}
	return v
}

func (st *state) offeringView(base string, o *Offering) map[string]any {
	plans := []map[string]any{}
	for _, p := range st.plans {
		if p.OfferingUUID == o.UUID {
			plans = append(plans, st.planView(base, p))
		}
	}
	m := map[string]any{
		"uuid": o.UUID, "url": base + "/api/marketplace-provider-offerings/" + o.UUID + "/",
		"name": o.Name, "type": o.Type, "state": o.State, "backend_id": o.BackendID,
		"customer_uuid": o.CustomerUUID, "components": o.Components, "plugin_options": simkit.CloneOrEmpty(o.PluginOptions),
		"partitions": []any{}, "plans": plans,
	}
	if c := st.customers[o.CustomerUUID]; c != nil {
		m["customer_name"] = c.Name
	}
	return m
}

func (st *state) planView(base string, p *Plan) map[string]any {
	return map[string]any{
		"uuid": p.UUID, "url": base + "/api/marketplace-plans/" + p.UUID + "/", "name": p.Name,
		"offering_uuid": p.OfferingUUID, "quotas": simkit.CloneOrEmpty(p.Quotas), "archived": false,
	}
}

func teamView(base string, m TeamMember) map[string]any {
	v := toJSON[map[string]any](m)
	v["url"] = base + "/api/users/" + m.UUID + "/"
	if m.ExpirationTime == "" {
		v["expiration_time"] = nil
	}
	return v
}
