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

// ref is a uuid an object names: of an object of kind, which must exist
// unless the ref is optional (then it may also be empty).
type ref struct {
	kind     string
	id       *string
	optional bool
}

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
	// object checks an object's uuid, unique among its kind's, and the
	// objects it names (a project's customer, an order's resource, ...).
	object := func(kind string, id *string, refs ...ref) {
		fix(kind, id, true)
		if ids[kind+*id] {
			errs = append(errs, fmt.Errorf("duplicate %s %s", kind, *id))
		}
		ids[kind+*id] = true
		for _, r := range refs {
			fix(kind+" "+r.kind, r.id, !r.optional)
			if !r.optional && !ids[r.kind+*r.id] {
				errs = append(errs, fmt.Errorf("%s %s: unknown %s %s", kind, *id, r.kind, *r.id))
			}
		}
	}
	for i := range f.Users {
		u := &f.Users[i]
		object("user", &u.UUID)
		if u.Token == "" || u.Username == "" {
			errs = append(errs, fmt.Errorf("user %s: username and token are required", u.UUID))
		}
	}
	for i := range f.Customers {
		object("customer", &f.Customers[i].UUID)
	}
	for i := range f.Projects {
		object("project", &f.Projects[i].UUID, ref{"customer", &f.Projects[i].CustomerUUID, false})
	}
	for i := range f.Offerings {
		object("offering", &f.Offerings[i].UUID, ref{"customer", &f.Offerings[i].CustomerUUID, false})
	}
	for i := range f.Plans {
		object("plan", &f.Plans[i].UUID, ref{"offering", &f.Plans[i].OfferingUUID, false})
	}
	for i := range f.Resources {
		r := &f.Resources[i]
		object("resource", &r.UUID, ref{"offering", &r.Offering, false}, ref{"project", &r.Project, false}, ref{"plan", &r.Plan, true})
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
		object("order", &o.UUID, ref{"resource", &o.Resource, false}, ref{"plan", &o.Plan, true})
		if !slices.Contains(orderTypes, o.Type) || !slices.Contains(orderStates, o.State) {
			errs = append(errs, fmt.Errorf("order %s: invalid type %q or state %q", o.UUID, o.Type, o.State))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid fixture: %v", errs)
	}
	return nil
}
