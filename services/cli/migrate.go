package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/app"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/quota"
)

// migrateReport is what sitebus migrate found for one offering: what the
// first changes and passes of sitebus would do to a site the Python agent
// ran. Every part is the dry run of the code that makes the change
// (backend.PlanAdoptions is the decision a change takes before it adopts).
type migrateReport struct {
	Offering string `json:"offering"`
	Backend  string `json:"backend,omitempty"`
	// Adoptions lists the objects of the offering's resources that
	// sitebus does not mark yet: adopted (with the proof) or refused
	// (with the reason). Objects already sitebus's are counted only.
	Adoptions []adoptionEntry `json:"adoptions"`
	Managed   int             `json:"already_managed"`
	Absent    int             `json:"absent"`
	// Quota are the changes of status the first flag pass would make
	// (quota.Limits.PlanFlags): a paused resource whose object is active
	// drops to zero quota.
	Quota []quota.FlagChange `json:"quota_changes"`
	// Membership are the moves of the first membership pass
	// (membership.Service.Plan against Keycloak's members), Groups the
	// groups it would make or refuses.
	Membership []app.MembershipMove `json:"membership_moves"`
	Groups     []app.GroupChange    `json:"groups"`
	// Cleanup are the groups the Keycloak leftover cleanup would adopt
	// (the Python agent's, named by a live resource) and delete (this
	// deployment's, named by none); CleanupNote says why it would skip a
	// realm (then it deletes nothing there).
	Cleanup     []keycloaksync.GroupCleanup `json:"keycloak_cleanup"`
	CleanupNote string                      `json:"keycloak_cleanup_skipped,omitempty"`
	// UsageBasis says how the usage reported differs from the Python
	// agent's, when it does.
	UsageBasis string `json:"usage_basis,omitempty"`
	// Errors are what could not be read or done; each needs a person.
	Errors []string `json:"errors,omitempty"`
}

// adoptionEntry is one object sitebus would adopt or refuses.
type adoptionEntry struct {
	Object       string `json:"object"`
	Resource     string `json:"resource"`
	ResourceName string `json:"resource_name,omitempty"`
	Action       string `json:"action"` // adopt, refuse
	Proof        string `json:"proof,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// Adopted is set by --apply once the object carries sitebus's mark.
	Adopted bool `json:"adopted,omitempty"`
}

// needsPerson reports whether the offering has something sitebus will not
// decide alone: a refused object (every change for its resource errs) or
// a part that could not be planned.
func (r *migrateReport) needsPerson() bool {
	if len(r.Errors) > 0 {
		return true
	}
	for _, a := range r.Adoptions {
		if a.Action == backend.PlanRefuse {
			return true
		}
	}
	for _, g := range r.Groups {
		if g.Action == "refuse" {
			return true
		}
	}
	return false
}

func migrateCmd() *cobra.Command {
	var (
		path          string
		apply, asJSON bool
		timeout       time.Duration
	)
	c := &cobra.Command{
		Use:   "migrate -c CONFIG [--apply] [--json]",
		Short: "Show what sitebus would adopt, refuse and change on a site the Python agent ran; --apply adopts; exit 1 when something needs a person",
		Long: `migrate reads, per offering, the Waldur resources and the objects the
Python agent made for them, and prints what sitebus's first changes would do:
the objects it would adopt (with the proof that they are the Python agent's
for that resource) and those it refuses (with the reason). It changes
nothing unless --apply, which adopts the objects listed as "adopt" the way
the first change for their resource would. It exits 1 when something needs
a person: a refused object, or a part it could not read.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := app.LoadPlan(path)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			reports := runMigrate(ctx, plan, apply)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"applied": apply, "offerings": reports}); err != nil {
					return err
				}
			} else {
				printMigrate(out, reports, apply)
			}
			needs := 0
			for i := range reports {
				if reports[i].needsPerson() {
					needs++
				}
			}
			if needs > 0 {
				return fmt.Errorf("%d offering(s) need a person: see the refusals and errors above", needs)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	f.BoolVar(&apply, "apply", false, "adopt the objects listed as adopt (nothing else is changed)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of text")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "bound of the whole run")
	return c
}

// runMigrate plans (and with apply, adopts) every offering in file order.
func runMigrate(ctx context.Context, plan *app.Plan, apply bool) []migrateReport {
	out := make([]migrateReport, 0, len(plan.Offerings))
	for i := range plan.Offerings {
		op := &plan.Offerings[i]
		// Empty lists, not null, in --json: "nothing" is an answer.
		r := migrateReport{Offering: fmt.Sprintf("%s (%s)", op.Config.Name, op.Config.OfferingUUIDHex()),
			Adoptions: []adoptionEntry{}, Quota: []quota.FlagChange{}, Membership: []app.MembershipMove{}, Groups: []app.GroupChange{},
			Cleanup: []keycloaksync.GroupCleanup{}}
		migrateOffering(ctx, op, apply, &r)
		out = append(out, r)
	}
	planCleanup(ctx, plan, out)
	return out
}

// planCleanup adds to each offering's report what the Keycloak leftover
// cleanup would adopt and delete (keycloaksync.Service.PlanCleanup over
// every Keycloak-enabled offering of the config, as run's keycloak-sync
// sees them: a realm's cleanup considers all of them at once).
func planCleanup(ctx context.Context, plan *app.Plan, reports []migrateReport) {
	discard := slog.New(slog.DiscardHandler)
	var offerings []keycloaksync.Offering
	byHex := map[string]*migrateReport{}
	for i := range plan.Offerings {
		op := &plan.Offerings[i]
		r := &reports[i]
		byHex[op.Config.OfferingUUIDHex()] = r
		wcfg := op.Waldur
		wcfg.Logger = discard
		w, err := waldur.New(wcfg)
		if err != nil {
			continue // already an error of the offering
		}
		ko, ok, err := app.KeycloakOffering(op, w, func(name string) (backend.Backend, error) {
			return op.NewBackend(name, app.BackendOptions{Logger: discard})
		})
		if err != nil {
			r.Errors = append(r.Errors, "keycloak cleanup: "+err.Error())
			continue
		}
		if ok {
			ko.Keycloak.Logger = discard
			offerings = append(offerings, ko)
		}
	}
	if len(offerings) == 0 {
		return
	}
	kc, err := keycloaksync.New(nil, keycloaksync.Config{Offerings: offerings, Logger: discard})
	if err != nil {
		for _, o := range offerings {
			r := byHex[o.Config.OfferingUUIDHex()]
			r.Errors = append(r.Errors, "keycloak cleanup: "+err.Error())
		}
		return
	}
	changes, skipped := kc.PlanCleanup(ctx)
	for _, c := range changes {
		if r := byHex[c.Offering]; r != nil {
			r.Cleanup = append(r.Cleanup, c)
		}
	}
	if skipped != nil {
		for _, o := range offerings {
			r := byHex[o.Config.OfferingUUIDHex()]
			r.CleanupNote = skipped.Error()
		}
	}
}

// migrateOffering builds the offering's backend as run does, with the
// Waldur resources it proves ownership with, and fills r with the dry
// run of each part; a part that fails is an error in r, the others still
// run.
func migrateOffering(ctx context.Context, op *app.OfferingPlan, apply bool, r *migrateReport) {
	name := op.ObjectBackend()
	if name == "" {
		return // no objects of a backend.Backend: nothing to adopt or flag
	}
	r.Backend = name
	fail := func(part string, err error) { r.Errors = append(r.Errors, part+": "+err.Error()) }
	discard := slog.New(slog.DiscardHandler)
	wcfg := op.Waldur
	wcfg.Logger = discard
	w, err := waldur.New(wcfg)
	if err != nil {
		fail("waldur", err)
		return
	}
	finder := app.WaldurResources(w, op.Config.WaldurOfferingUUID)
	b, err := op.NewBackend(name, app.BackendOptions{Logger: discard, Resources: finder})
	if err != nil {
		fail("backend", err)
		return
	}
	if err := planAdoptions(ctx, b, finder, apply, r); err != nil {
		fail("adoption", err)
	}
	limits, err := quota.NewLimits([]quota.Offering{{Config: op.Config, Waldur: w, Backend: b}}, discard, nil)
	if err == nil {
		r.Quota, err = limits.PlanFlags(ctx, op.Config.OfferingUUIDHex())
	}
	if err != nil {
		fail("quota flags", err)
	}
	if err := planMembership(ctx, op, w, b, r); err != nil {
		fail("membership", err)
	}
	if op.Config.ReportingBackend == rancher.Type {
		r.UsageBasis = rancherUsageBasis
	}
}

// planMembership fills r with the moves of the first membership pass of
// an offering whose membership_sync_backend has Keycloak groups.
func planMembership(ctx context.Context, op *app.OfferingPlan, w *waldur.Client, objects backend.Backend, r *migrateReport) error {
	name := op.Config.MembershipSyncBackend
	if name == "" || op.Keycloak == nil || name == ranchercluster.Type {
		return nil
	}
	discard := slog.New(slog.DiscardHandler)
	b := objects
	if name != r.Backend {
		var err error
		if b, err = op.NewBackend(name, app.BackendOptions{Logger: discard, Resources: app.WaldurResources(w, op.Config.WaldurOfferingUUID)}); err != nil {
			return err
		}
	}
	mo := app.MembershipOffering(op.Config, w, b)
	if mo.Groups == nil && mo.ProjectGroups == nil {
		return nil // no Keycloak groups (OKD binds users itself)
	}
	svc, err := membership.New(nil, membership.Config{Offerings: []membership.Offering{mo}, Logger: discard})
	if err != nil {
		return err
	}
	plan, err := svc.Plan(ctx, op.Config.OfferingUUIDHex())
	if err != nil {
		return err
	}
	kcfg := *op.Keycloak
	kcfg.Logger = discard
	kc, err := keycloak.New(kcfg)
	if err != nil {
		return err
	}
	r.Membership, r.Groups, err = app.MembershipMoves(ctx, kc, plan)
	return err
}

// rancherUsageBasis is the one usage difference a switching Rancher site
// meets (README, "Compatibility with the Python agent").
const rancherUsageBasis = "sitebus reports the sum of container requests in the project's namespaces; the Python agent reported the quota's status.used of limits. " +
	"In the month of the switch a figure lower than the agent's last one is refused as an anomaly (usage anomaly log, sitebus_usage_anomalies_total) until the next month."

// planAdoptions fills r with b's adoption plan and, with apply, adopts.
// A backend that makes no objects of its own to adopt (rancher-cluster's
// sagas) has no plan.
func planAdoptions(ctx context.Context, b backend.Backend, f backend.ResourceFinder, apply bool, r *migrateReport) error {
	a, ok := b.(backend.Adopter)
	if !ok {
		return nil
	}
	plan, err := backend.PlanAdoptions(ctx, b, a, f)
	if err != nil {
		return err
	}
	for _, p := range plan {
		switch p.Action {
		case backend.PlanManaged:
			r.Managed++
			continue
		case backend.PlanAbsent:
			r.Absent++
			continue
		}
		e := adoptionEntry{Object: p.Object, Resource: p.Resource.UUID, ResourceName: p.Resource.Name,
			Action: p.Action, Proof: p.Proof, Reason: p.Reason}
		if apply && p.Action == backend.PlanAdopt {
			if err := a.Adopt(ctx, p.BackendID); err != nil {
				r.Errors = append(r.Errors, fmt.Sprintf("adopt %s: %v", p.Object, err))
			} else {
				e.Adopted = true
			}
		}
		r.Adoptions = append(r.Adoptions, e)
	}
	return nil
}

func printMigrate(out io.Writer, reports []migrateReport, applied bool) {
	for i := range reports {
		r := &reports[i]
		fmt.Fprintf(out, "offering %s", r.Offering)
		if r.Backend != "" {
			fmt.Fprintf(out, ", backend %s", r.Backend)
		}
		fmt.Fprintln(out)
		adopt, refuse := 0, 0
		for _, a := range r.Adoptions {
			switch a.Action {
			case backend.PlanAdopt:
				adopt++
				verb := "would adopt"
				if a.Adopted {
					verb = "adopted"
				}
				fmt.Fprintf(out, "  %s %s for resource %s: %s\n", verb, a.Object, resourceLabel(a), a.Proof)
			case backend.PlanRefuse:
				refuse++
				fmt.Fprintf(out, "  REFUSES %s (resource %s): %s; every change for the resource errs until a person decides\n",
					a.Object, resourceLabel(a), a.Reason)
			}
		}
		fmt.Fprintf(out, "  adoption: %d to adopt, %d refused, %d already sitebus's, %d resource(s) without an object\n",
			adopt, refuse, r.Managed, r.Absent)
		for _, q := range r.Quota {
			fmt.Fprintf(out, "  quota: would %s %s for resource %s: %s -> %s%s\n", q.Action, q.BackendID, q.Resource, q.From, q.To, limitsBefore(q))
		}
		if r.Backend != "" {
			fmt.Fprintf(out, "  quota: %d flag change(s)\n", len(r.Quota))
		}
		for _, m := range r.Membership {
			switch {
			case m.Pending:
				fmt.Fprintf(out, "  membership: %s into %s when Keycloak has the user (resource %s)\n", m.User, m.To, m.Resource)
			case m.From == "":
				fmt.Fprintf(out, "  membership: add %s to %s (resource %s)\n", m.User, m.To, m.Resource)
			case m.To == "":
				fmt.Fprintf(out, "  membership: remove %s from %s (resource %s)\n", m.User, m.From, m.Resource)
			default:
				fmt.Fprintf(out, "  membership: move %s from %s to %s (resource %s)\n", m.User, m.From, m.To, m.Resource)
			}
		}
		for _, g := range r.Groups {
			switch g.Action {
			case "refuse":
				fmt.Fprintf(out, "  REFUSES group %s (resource %s): %s\n", g.Group, g.Resource, g.Reason)
			default:
				fmt.Fprintf(out, "  group: would %s %s with %d member(s) (resource %s): %s\n", g.Action, g.Group, g.Members, g.Resource, g.Reason)
			}
		}
		for _, c := range r.Cleanup {
			switch c.Action {
			case keycloaksync.CleanupAdopt:
				fmt.Fprintf(out, "  keycloak: the cleanup would adopt group %s (realm %s): a live resource of this offering names it\n", c.Group, c.Realm)
			default:
				fmt.Fprintf(out, "  keycloak: the cleanup would delete group %s (realm %s): no live resource of this offering names it\n", c.Group, c.Realm)
			}
		}
		if r.CleanupNote != "" {
			fmt.Fprintf(out, "  keycloak: %s\n", r.CleanupNote)
		}
		if r.UsageBasis != "" {
			fmt.Fprintf(out, "  usage: %s\n", r.UsageBasis)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(out, "  ERROR %s\n", e)
		}
	}
	if !applied {
		fmt.Fprintln(out, "nothing was changed; --apply adopts the objects listed as to adopt")
	}
}

// limitsBefore says what a change of status takes away or gives back.
func limitsBefore(q quota.FlagChange) string {
	if len(q.Limits) == 0 {
		return ""
	}
	parts := make([]string, 0, len(q.Limits))
	for _, k := range slices.Sorted(maps.Keys(q.Limits)) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, q.Limits[k]))
	}
	return " (limits now " + strings.Join(parts, " ") + ")"
}

func resourceLabel(a adoptionEntry) string {
	if a.ResourceName == "" {
		return a.Resource
	}
	return fmt.Sprintf("%s (%s)", a.ResourceName, a.Resource)
}
