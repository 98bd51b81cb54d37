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
	cp := *f
	cp.Users = slices.Clone(f.Users)
	cp.Customers = slices.Clone(f.Customers)
	cp.Projects = slices.Clone(f.Projects)
	cp.Offerings = slices.Clone(f.Offerings)
	cp.Plans = slices.Clone(f.Plans)
	cp.Resources = slices.Clone(f.Resources)
	cp.Orders = slices.Clone(f.Orders)
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
