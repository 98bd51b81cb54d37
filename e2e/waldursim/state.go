package waldursim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// state is the simulator's world; every access holds Server.mu.
type state struct {
	now func() string

	users     map[string]*User // by token
	customers map[string]*Customer
	projects  map[string]*Project
	offerings map[string]*Offering
	plans     map[string]*Plan
	// Stores list in insertion order, so lists are stable.
	resources simkit.Store[Resource]
	orders    simkit.Store[Order]

	identities simkit.Store[Identity]
	services   simkit.Store[AgentService]
	subs       simkit.Store[EventSubscription]
	queues     simkit.Store[SubscriptionQueue]
	usages     simkit.Store[ComponentUsage]
}

// Identity is a marketplace-site-agent-identity.
type Identity struct {
	UUID              string `json:"uuid"`
	URL               string `json:"url"`
	Offering          string `json:"offering"`
	Name              string `json:"name"`
	Version           string `json:"version"`
	Dependencies      []any  `json:"dependencies"`
	LastRestarted     string `json:"last_restarted"`
	ConfigFilePath    string `json:"config_file_path"`
	ConfigFileContent string `json:"config_file_content"`
	Created           string `json:"created"`
	Modified          string `json:"modified"`
	Services          []any  `json:"services"`
}

// AgentService is a service registered by an identity.
type AgentService struct {
	UUID       string         `json:"uuid"`
	URL        string         `json:"url"`
	Identity   string         `json:"identity"`
	Name       string         `json:"name"`
	Mode       string         `json:"mode"`
	State      string         `json:"state"`
	Statistics map[string]any `json:"statistics"`
	Processors []any          `json:"processors"` // always []: sitebus registers no processors
	Created    string         `json:"created"`
	Modified   string         `json:"modified"`
}

// EventSubscription mirrors Waldur's event-subscriptions object.
type EventSubscription struct {
	UUID              string           `json:"uuid"`
	URL               string           `json:"url"`
	User              string           `json:"user"`
	UserUUID          string           `json:"user_uuid"`
	UserUsername      string           `json:"user_username"`
	UserFullName      string           `json:"user_full_name"`
	Description       string           `json:"description"`
	ObservableObjects []map[string]any `json:"observable_objects"`
	SourceIP          *string          `json:"source_ip"`
	Created           string           `json:"created"`
	Modified          string           `json:"modified"`
}

// SubscriptionQueue is the create_queue response object.
type SubscriptionQueue struct {
	UUID                  string `json:"uuid"`
	URL                   string `json:"url"`
	EventSubscription     string `json:"event_subscription"`
	EventSubscriptionUUID string `json:"event_subscription_uuid"`
	OfferingUUID          string `json:"offering_uuid"`
	ObjectType            string `json:"object_type"`
	QueueName             string `json:"queue_name"`
	Vhost                 string `json:"vhost"`
	Created               string `json:"created"`
}

// ComponentUsage is one marketplace-component-usages row.
type ComponentUsage struct {
	UUID          string `json:"uuid"`
	URL           string `json:"url"`
	ResourceUUID  string `json:"resource_uuid"`
	ResourceName  string `json:"resource_name"`
	OfferingUUID  string `json:"offering_uuid"`
	Type          string `json:"type"`
	Name          string `json:"name"`
	MeasuredUnit  string `json:"measured_unit"`
	Usage         string `json:"usage"`
	Date          string `json:"date"`
	BillingPeriod string `json:"billing_period"`
	Created       string `json:"created"`
	Modified      string `json:"modified"`
}

func newState(f *Fixture, now func() string) (*state, error) {
	// Re-validate: a Fixture built in Go (not parsed) gets normalised too.
	cp := Fixture{Users: slices.Clone(f.Users), Customers: slices.Clone(f.Customers), Projects: slices.Clone(f.Projects),
		Offerings: slices.Clone(f.Offerings), Plans: slices.Clone(f.Plans), Resources: slices.Clone(f.Resources),
		Orders: slices.Clone(f.Orders)}
	if err := cp.normalize(); err != nil {
		return nil, err
	}
	ts := now()
	for i := range cp.Offerings {
		o := &cp.Offerings[i]
		o.Type = cmp.Or(o.Type, "Marketplace.Slurm")
		o.State = cmp.Or(o.State, "Active")
		// Components are the simulator's own (create and update change
		// them; never nil, so rendered as a list); each has a uuid, as
		// Waldur's have.
		comps := make([]map[string]any, len(o.Components))
		for j, c := range o.Components {
			comps[j] = maps.Clone(c)
			if id, ok := comps[j]["uuid"].(string); !ok || id == "" {
				comps[j]["uuid"] = derivedUUID("component", o.UUID+"/"+fmt.Sprint(c["type"]))
			}
		}
		o.Components = comps
	}
	st := &state{
		now:       now,
		users:     simkit.Index(cp.Users, func(u User) string { return u.Token }),
		customers: simkit.Index(cp.Customers, func(c Customer) string { return c.UUID }),
		projects:  simkit.Index(cp.Projects, func(p Project) string { return p.UUID }),
		offerings: simkit.Index(cp.Offerings, func(o Offering) string { return o.UUID }),
		plans:     simkit.Index(cp.Plans, func(p Plan) string { return p.UUID }),
	}
	for i := range cp.Resources {
		r := &cp.Resources[i]
		r.Team, r.Limits = slices.Clone(r.Team), maps.Clone(r.Limits)
		r.Created, r.Modified = ts, ts
		st.resources.Put(r.UUID, r)
	}
	for i := range cp.Orders {
		o := &cp.Orders[i]
		o.Created, o.Modified = ts, ts
		st.orders.Put(o.UUID, o)
	}
	return st, nil
}

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
	// Ordered by uuid: map order is random, and a list must be stable.
	plans := append([]map[string]any{}, simkit.Select(st.plans, func(p *Plan) string { return p.UUID },
		func(p *Plan) bool { return p.OfferingUUID == o.UUID }, func(p *Plan) map[string]any { return st.planView(base, p) })...)
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
