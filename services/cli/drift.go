package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/app"
	"github.com/sitebus/sitebus/services/drift"
)

func driftCmd() *cobra.Command {
	var (
		path           string
		repair, asJSON bool
		timeout        time.Duration
		nf             natsFlags
	)
	c := &cobra.Command{
		Use:   "drift -c CONFIG [--repair] [--json]",
		Short: "Compare what Waldur says each resource should be with its platform object; --repair puts back what sitebus manages",
		Long: `drift compares, per offering, each live resource's limits and flags
with its object's quota, and its access groups' members with the team, as
the periodic drift pass does (sitebus.periods.drift_period). Objects and
groups without sitebus's mark are not compared. It changes nothing unless
--repair; members are repaired by the running sitebus's membership
service, reached over --nats-url. It exits 1 when drift is left: found and
not repaired, or a check could not compare.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := app.LoadPlan(path)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			var b *bus.Bus
			if repair {
				var closeFn func()
				if b, closeFn, err = nf.connect(ctx); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; members will be reported, not repaired\n", err)
				} else {
					defer closeFn()
				}
			}
			reports := runDrift(ctx, plan, b, repair)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"repaired": repair, "offerings": reports}); err != nil {
					return err
				}
			} else {
				printDrift(out, reports, repair)
			}
			if left := driftLeft(reports); left > 0 {
				return fmt.Errorf("%d drift finding(s) or failed check(s) left", left)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	f.BoolVar(&repair, "repair", false, "put back what Waldur says on the objects and groups sitebus manages")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of text")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "bound of the whole run")
	nf.add(c)
	return c
}

// runDrift builds every offering's checks as `sitebus run` does and runs
// one pass.
func runDrift(ctx context.Context, plan *app.Plan, b *bus.Bus, repair bool) []contract.DriftReport {
	discard := slog.New(slog.DiscardHandler)
	var offerings []drift.Offering
	var failed []contract.DriftReport
	for i := range plan.Offerings {
		op := &plan.Offerings[i]
		name := op.ObjectBackend()
		if name == "" {
			continue
		}
		fail := func(err error) {
			failed = append(failed, contract.DriftReport{OfferingUUID: op.Config.OfferingUUIDHex(), Offering: op.Config.Name,
				Checked: time.Now().UTC(), Findings: []contract.DriftFinding{}, Errors: []string{err.Error()}})
		}
		wcfg := op.Waldur
		wcfg.Logger = discard
		w, err := waldur.New(wcfg)
		if err != nil {
			fail(err)
			continue
		}
		finder := app.WaldurResources(w, op.Config.WaldurOfferingUUID)
		objects, err := op.NewBackend(name, app.BackendOptions{Logger: discard, Resources: finder})
		if err != nil {
			fail(err)
			continue
		}
		members := objects
		if m := op.Config.MembershipSyncBackend; m == "" || m == ranchercluster.Type {
			members = nil // none, or a cluster's groups (their owner's): as in run
		} else if m != name {
			// Unbuilt, its members and bindings would go uncompared
			// without a word: the offering fails, as it does in run.
			if members, err = op.NewBackend(m, app.BackendOptions{Logger: discard, Resources: finder}); err != nil {
				fail(fmt.Errorf("membership backend %s: %w", m, err))
				continue
			}
		}
		o, err := app.DriftOffering(op, w, objects, members, b, discard, nil)
		if err != nil {
			fail(err)
			continue
		}
		offerings = append(offerings, o)
	}
	return append(failed, drift.New(drift.Config{Offerings: offerings, Logger: discard}).Pass(ctx, repair)...)
}

func driftLeft(reports []contract.DriftReport) int {
	n := 0
	for _, r := range reports {
		n += len(r.Errors)
		for _, f := range r.Findings {
			if !f.Repaired {
				n++
			}
		}
	}
	return n
}

func printDrift(w io.Writer, reports []contract.DriftReport, repair bool) {
	for _, r := range reports {
		fmt.Fprintf(w, "%s (%s): %d finding(s)\n", r.Offering, r.OfferingUUID, len(r.Findings))
		for _, f := range r.Findings {
			state := ""
			switch {
			case f.Repaired:
				state = " [repaired]"
			case f.RepairError != "":
				state = " [not repaired: " + f.RepairError + "]"
			}
			fmt.Fprintf(w, "  %-8s %s (resource %s): want %s, have %s%s\n", f.Kind, f.Object, f.Resource, f.Want, f.Have, state)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
	}
	if !repair {
		fmt.Fprintln(w, "Nothing was changed; --repair puts back what sitebus manages.")
	}
}
