package waldursim

// APIOrder is an order as GET /api/marketplace-orders/{uuid}/ renders it.
type APIOrder struct {
	UUID                    string         `json:"uuid"`
	URL                     string         `json:"url"`
	Type                    string         `json:"type"`
	State                   string         `json:"state"`
	ResourceUUID            string         `json:"resource_uuid"`
	MarketplaceResourceUUID string         `json:"marketplace_resource_uuid"`
	ResourceName            string         `json:"resource_name"`
	Offering                string         `json:"offering"`
	OfferingUUID            string         `json:"offering_uuid"`
	OfferingName            string         `json:"offering_name"`
	OfferingType            string         `json:"offering_type"`
	ProjectUUID             string         `json:"project_uuid"`
	ProjectName             string         `json:"project_name"`
	ProjectSlug             string         `json:"project_slug"`
	CustomerUUID            string         `json:"customer_uuid"`
	CustomerName            string         `json:"customer_name"`
	CustomerSlug            string         `json:"customer_slug"`
	PlanUUID                *string        `json:"plan_uuid"`
	Limits                  map[string]int `json:"limits"`
	Attributes              map[string]any `json:"attributes"`
	BackendID               string         `json:"backend_id"`
	ErrorMessage            string         `json:"error_message"`
	ErrorTraceback          string         `json:"error_traceback"`
	Created                 string         `json:"created"`
	Modified                string         `json:"modified"`
	CompletedAt             *string        `json:"completed_at"`
}

// APIResource is a resource as GET /api/marketplace-provider-resources/{uuid}/
// renders it.
type APIResource struct {
	UUID                 string           `json:"uuid"`
	URL                  string           `json:"url"`
	Name                 string           `json:"name"`
	Slug                 string           `json:"slug"`
	State                string           `json:"state"`
	BackendID            string           `json:"backend_id"`
	Offering             string           `json:"offering"`
	OfferingUUID         string           `json:"offering_uuid"`
	OfferingName         string           `json:"offering_name"`
	OfferingType         string           `json:"offering_type"`
	OfferingBackendID    string           `json:"offering_backend_id"`
	OfferingPluginOpts   map[string]any   `json:"offering_plugin_options"`
	Project              string           `json:"project"`
	ProjectUUID          string           `json:"project_uuid"`
	ProjectName          string           `json:"project_name"`
	ProjectSlug          string           `json:"project_slug"`
	ProjectDescription   string           `json:"project_description"`
	ProjectEndDate       *string          `json:"project_end_date"`
	CustomerUUID         string           `json:"customer_uuid"`
	CustomerName         string           `json:"customer_name"`
	CustomerSlug         string           `json:"customer_slug"`
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
	LastSync             *string          `json:"last_sync"`
	ErrorMessage         string           `json:"error_message"`
	ErrorTraceback       string           `json:"error_traceback"`
	Created              string           `json:"created"`
	Modified             string           `json:"modified"`
	// Not part of Waldur's resource; exposed on /sim/ only.
	MembershipSyncStatuses []any `json:"membership_sync_statuses,omitempty"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (st *state) orderView(base string, o *Order) APIOrder {
	v := APIOrder{
		UUID: o.UUID, URL: base + "/api/marketplace-orders/" + o.UUID + "/",
		Type: o.Type, State: o.State, ResourceUUID: o.Resource, MarketplaceResourceUUID: o.Resource,
		PlanUUID: strPtr(o.Plan), Limits: o.Limits, Attributes: o.Attributes, BackendID: o.BackendID,
		ErrorMessage: o.ErrorMessage, ErrorTraceback: o.ErrorTraceback,
		Created: o.Created, Modified: o.Modified, CompletedAt: strPtr(o.CompletedAt),
	}
	if v.Limits == nil {
		v.Limits = map[string]int{}
	}
	if v.Attributes == nil {
		v.Attributes = map[string]any{}
	}
	if r := st.resources[o.Resource]; r != nil {
		v.ResourceName = r.Name
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
	}
	return v
}

func (st *state) resourceView(base string, r *Resource) APIResource {
	v := APIResource{
		UUID: r.UUID, URL: base + "/api/marketplace-provider-resources/" + r.UUID + "/",
		Name: r.Name, Slug: r.Slug, State: r.State, BackendID: r.BackendID,
		PlanUUID: strPtr(r.Plan), Limits: r.Limits, Attributes: r.Attributes,
		BackendMetadata: r.BackendMetadata, Endpoints: r.Endpoints,
		Paused: r.Paused, Downscaled: r.Downscaled, RestrictMemberAccess: r.RestrictMemberAccess,
		EndDate: strPtr(r.EndDate), LastSync: strPtr(r.LastSync),
		ErrorMessage: r.ErrorMessage, ErrorTraceback: r.ErrorTraceback,
		Created: r.Created, Modified: r.Modified, MembershipSyncStatuses: r.MembershipSyncStatuses,
	}
	if v.Limits == nil {
		v.Limits = map[string]int{}
	}
	if v.Attributes == nil {
		v.Attributes = map[string]any{}
	}
	if v.BackendMetadata == nil {
		v.BackendMetadata = map[string]any{}
	}
	if v.Endpoints == nil {
		v.Endpoints = []map[string]any{}
	}
	if off := st.offerings[r.Offering]; off != nil {
		v.Offering = base + "/api/marketplace-provider-offerings/" + off.UUID + "/"
		v.OfferingUUID, v.OfferingName, v.OfferingType, v.OfferingBackendID = off.UUID, off.Name, off.Type, off.BackendID
		v.OfferingPluginOpts = off.PluginOptions
		if v.OfferingPluginOpts == nil {
			v.OfferingPluginOpts = map[string]any{}
		}
	}
	if p := st.projects[r.Project]; p != nil {
		v.Project = base + "/api/projects/" + p.UUID + "/"
		v.ProjectUUID, v.ProjectName, v.ProjectSlug, v.ProjectDescription = p.UUID, p.Name, p.Slug, p.Description
		v.ProjectEndDate = strPtr(p.EndDate)
		if c := st.customers[p.CustomerUUID]; c != nil {
			v.CustomerUUID, v.CustomerName, v.CustomerSlug = c.UUID, c.Name, c.Slug
		}
	}
	return v
}

func (st *state) offeringView(base string, o *Offering) map[string]any {
	comps := o.Components
	if comps == nil {
		comps = []map[string]any{}
	}
	opts := o.PluginOptions
	if opts == nil {
		opts = map[string]any{}
	}
	var plans []map[string]any
	for _, p := range st.plans {
		if p.OfferingUUID == o.UUID {
			plans = append(plans, st.planView(base, p))
		}
	}
	if plans == nil {
		plans = []map[string]any{}
	}
	m := map[string]any{
		"uuid": o.UUID, "url": base + "/api/marketplace-provider-offerings/" + o.UUID + "/",
		"name": o.Name, "type": o.Type, "state": o.State, "backend_id": o.BackendID,
		"customer_uuid": o.CustomerUUID, "components": comps, "plugin_options": opts,
		"partitions": []any{}, "plans": plans,
	}
	if c := st.customers[o.CustomerUUID]; c != nil {
		m["customer_name"] = c.Name
	}
	return m
}

func (st *state) planView(base string, p *Plan) map[string]any {
	q := p.Quotas
	if q == nil {
		q = map[string]int{}
	}
	return map[string]any{
		"uuid": p.UUID, "url": base + "/api/marketplace-plans/" + p.UUID + "/", "name": p.Name,
		"offering_uuid": p.OfferingUUID, "quotas": q, "archived": false,
	}
}

func teamView(base string, m TeamMember) map[string]any {
	v := toMap(m)
	v["url"] = base + "/api/users/" + m.UUID + "/"
	if m.ExpirationTime == "" {
		v["expiration_time"] = nil
	}
	return v
}
