package waldursim

import (
	"cmp"
	"fmt"
	"slices"
)

// Valid enumerations, as Mastermind defines them.
var (
	orderStates = []string{"pending-consumer", "pending-provider", "pending-project",
		"pending-start-date", "executing", "done", "erred", "canceled", "rejected"}
	orderTypes     = []string{"Create", "Update", "Terminate", "Restore"}
	resourceStates = []string{"Creating", "OK", "Erred", "Updating", "Terminating", "Terminated"}
	objectTypes    = []string{"course_account", "importable_resources", "offering_resources_sync",
		"offering_user", "order", "resource", "resource_api_key_rotation",
		"resource_end_date_change_request", "resource_periodic_limits", "service_account",
		"user_lifecycle", "user_profile", "user_role", "user_ssh_key"}
)

func (f *Fixture) normalize() error {
	var errs []error
	fix := func(what string, p *string, required bool) {
		if *p == "" && !required {
			return
		}
		h, ok := normUUID(*p)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: invalid uuid %q", what, *p))
			return
		}
		*p = h
	}
	ids := map[string]bool{}
	unique := func(kind, id string) {
		if ids[kind+id] {
			errs = append(errs, fmt.Errorf("duplicate %s %s", kind, id))
		}
		ids[kind+id] = true
	}
	has := func(kind, id string) bool { return ids[kind+id] }
	for i := range f.Users {
		u := &f.Users[i]
		fix("user", &u.UUID, true)
		unique("user", u.UUID)
		if u.Token == "" || u.Username == "" {
			errs = append(errs, fmt.Errorf("user %s: username and token are required", u.UUID))
		}
	}
	for i := range f.Customers {
		c := &f.Customers[i]
		fix("customer", &c.UUID, true)
		unique("customer", c.UUID)
	}
	// child checks an object that names its owner (a project's customer,
	// an offering's customer, a plan's offering, an order's resource).
	child := func(kind string, id *string, field, parent string, parentID *string) {
		fix(kind, id, true)
		fix(kind+" "+field, parentID, true)
		unique(kind, *id)
		if !has(parent, *parentID) {
			errs = append(errs, fmt.Errorf("%s %s: unknown %s %s", kind, *id, parent, *parentID))
		}
	}
	for i := range f.Projects {
		child("project", &f.Projects[i].UUID, "customer_uuid", "customer", &f.Projects[i].CustomerUUID)
	}
	for i := range f.Offerings {
		child("offering", &f.Offerings[i].UUID, "customer_uuid", "customer", &f.Offerings[i].CustomerUUID)
	}
	for i := range f.Plans {
		child("plan", &f.Plans[i].UUID, "offering_uuid", "offering", &f.Plans[i].OfferingUUID)
	}
	for i := range f.Resources {
		r := &f.Resources[i]
		fix("resource", &r.UUID, true)
		fix("resource offering", &r.Offering, true)
		fix("resource project", &r.Project, true)
		fix("resource plan", &r.Plan, false)
		unique("resource", r.UUID)
		if !has("offering", r.Offering) || !has("project", r.Project) {
			errs = append(errs, fmt.Errorf("resource %s: unknown offering or project", r.UUID))
		}
		r.State = cmp.Or(r.State, "OK")
		if !slices.Contains(resourceStates, r.State) {
			errs = append(errs, fmt.Errorf("resource %s: invalid state %q", r.UUID, r.State))
		}
		for j := range r.Team {
			m := &r.Team[j]
			fix("team member", &m.UUID, true)
			m.OfferingUserState = cmp.Or(m.OfferingUserState, "OK")
		}
	}
	for i := range f.Orders {
		o := &f.Orders[i]
		child("order", &o.UUID, "resource", "resource", &o.Resource)
		fix("order plan", &o.Plan, false)
		if !slices.Contains(orderTypes, o.Type) || !slices.Contains(orderStates, o.State) {
			errs = append(errs, fmt.Errorf("order %s: invalid type %q or state %q", o.UUID, o.Type, o.State))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid fixture: %v", errs)
	}
	return nil
}
