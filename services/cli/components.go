package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/app"
)

// optionalComponentFields are the offering-component fields the Python
// agent passes from backend_components to Waldur when set
// (load_components_to_waldur's _OPTIONAL_COMPONENT_FIELDS). type and
// k8s_resource are the plugins' own and are not sent.
var optionalComponentFields = []string{
	"description", "min_value", "max_value", "max_available_limit", "default_limit", "limit_period",
	"article_code", "is_boolean", "is_prepaid", "min_prepaid_duration", "max_prepaid_duration",
	"prepaid_duration_step", "min_renewal_duration", "max_renewal_duration", "renewal_duration_step",
}

// componentRequest is what the Python agent sends for one configured
// component (Optional never nil, so callers may add to it): billing_type from accounting_type, name from label,
// limit_amount from limit (null when unset), the optional fields that are
// set, and is_prepaid true for a one-time component unless configured.
func componentRequest(typ string, c config.BackendComponent) waldur.ComponentRequest {
	r := waldur.ComponentRequest{BillingType: c.AccountingType, Type: typ, Name: c.Label, MeasuredUnit: c.MeasuredUnit,
		LimitAmount: c.Limit, Optional: map[string]any{}}
	for _, k := range optionalComponentFields {
		if v, ok := c.Extra[k]; ok && v != nil {
			r.Optional[k] = v
		}
	}
	if _, set := r.Optional["is_prepaid"]; !set && c.AccountingType == "one" {
		r.Optional["is_prepaid"] = true
	}
	return r
}

// componentOutcome is what load-components did with one component.
type componentOutcome struct {
	Type    string
	Action  string // created, updated, unchanged, failed
	Changed []string
	Err     error
}

// loadComponents creates the configured components the offering lacks and
// updates those whose fields differ; a component Waldur shows as
// configured is left alone, so a second run changes nothing.
func loadComponents(ctx context.Context, c *waldur.Client, o *config.Offering) ([]componentOutcome, error) {
	existing, err := c.OfferingComponents(ctx, o.WaldurOfferingUUID)
	if err != nil {
		return nil, fmt.Errorf("read the components of offering %s: %w", o.WaldurOfferingUUID, err)
	}
	byType := map[string]waldur.OfferingComponent{}
	for _, e := range existing {
		byType[e.Type] = e
	}
	var out []componentOutcome
	for _, typ := range componentOrder(o) {
		req := componentRequest(typ, o.BackendComponents[typ])
		e, ok := byType[typ]
		if !ok {
			err := c.CreateOfferingComponent(ctx, o.WaldurOfferingUUID, req)
			out = append(out, outcome(typ, "created", nil, err))
			continue
		}
		// As Python: an unconfigured limit_period keeps Waldur's.
		if _, set := req.Optional["limit_period"]; !set && e.LimitPeriod != "" {
			req.Optional["limit_period"] = e.LimitPeriod
		}
		changed := req.Differs(e)
		if len(changed) == 0 {
			out = append(out, componentOutcome{Type: typ, Action: "unchanged"})
			continue
		}
		req.UUID = e.UUID
		err := c.UpdateOfferingComponent(ctx, o.WaldurOfferingUUID, req)
		out = append(out, outcome(typ, "updated", changed, err))
	}
	return out, nil
}

func outcome(typ, action string, changed []string, err error) componentOutcome {
	if err != nil {
		return componentOutcome{Type: typ, Action: "failed", Changed: changed, Err: fmt.Errorf("%s: %w", strings.TrimSuffix(action, "d"), err)}
	}
	return componentOutcome{Type: typ, Action: action, Changed: changed}
}

// componentOrder is backend_components in file order (the order Python
// pushes them in), whatever built the offering.
func componentOrder(o *config.Offering) []string {
	if len(o.ComponentOrder) == len(o.BackendComponents) {
		return o.ComponentOrder
	}
	return slices.Sorted(maps.Keys(o.BackendComponents))
}

func loadComponentsCmd() *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:   "load-components -c CONFIG",
		Short: "Create or update each offering's components in Waldur from backend_components (idempotent)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := app.LoadPlan(path)
			if err != nil {
				return err
			}
			return runLoadComponents(cmd.Context(), cmd.OutOrStdout(), plan)
		},
	}
	c.Flags().StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	return c
}

// runLoadComponents loads every offering's components and prints, per
// offering, what changed. Unlike the Python agent, which logs a failure
// and exits 0, a failed component or offering fails the command.
func runLoadComponents(ctx context.Context, out io.Writer, plan *app.Plan) error {
	failed := 0
	for i := range plan.Offerings {
		op := &plan.Offerings[i]
		o := op.Config
		fmt.Fprintf(out, "offering %s (%s)\n", o.Name, o.OfferingUUIDHex())
		if len(o.BackendComponents) == 0 {
			fmt.Fprintln(out, "  no backend_components: nothing to load")
			continue
		}
		c, err := waldur.New(op.Waldur)
		if err == nil {
			var res []componentOutcome
			if res, err = loadComponents(ctx, c, o); err == nil {
				failed += printOutcomes(out, res)
				continue
			}
		}
		failed++
		fmt.Fprintf(out, "  failed: %v\n", err)
	}
	if failed > 0 {
		return fmt.Errorf("%d component(s) or offering(s) failed", failed)
	}
	return nil
}

func printOutcomes(out io.Writer, res []componentOutcome) (failed int) {
	count := map[string]int{}
	for _, r := range res {
		count[r.Action]++
		switch r.Action {
		case "updated":
			fmt.Fprintf(out, "  %s: updated (%s)\n", r.Type, strings.Join(r.Changed, ", "))
		case "failed":
			fmt.Fprintf(out, "  %s: failed to %v\n", r.Type, r.Err)
		default:
			fmt.Fprintf(out, "  %s: %s\n", r.Type, r.Action)
		}
	}
	if count["created"]+count["updated"]+count["failed"] == 0 {
		fmt.Fprintf(out, "  nothing to change: %d component(s) as configured\n", count["unchanged"])
	} else {
		fmt.Fprintf(out, "  %d created, %d updated, %d unchanged, %d failed\n", count["created"], count["updated"], count["unchanged"], count["failed"])
	}
	return count["failed"]
}
