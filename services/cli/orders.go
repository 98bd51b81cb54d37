package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/services/app"
)

func ordersCmd() *cobra.Command {
	var path string
	c := &cobra.Command{Use: "orders", Short: "Order tools"}
	c.PersistentFlags().StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	c.AddCommand(explainCmd(&path))
	return c
}

func explainCmd(path *string) *cobra.Command {
	var (
		asJSON  bool
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "explain -c CONFIG ORDER_UUID [--json]",
		Short: "Show, changing nothing, the calls an order would make and the saga it would start",
		Long: `explain reads the order from Waldur, finds the offering of the configuration
it belongs to, and runs the order lifecycle's code for it (the same code
sitebus run uses, for create, update and terminate) with every client in
dry-run mode: reads are sent, so the plan reflects the platform as it is
now; every call that would change something (Waldur, Kubernetes, Rancher,
OpenShift, Keycloak, OpenStack) is listed and not sent. When the order runs
as a saga, its steps are listed with the compensation that undoes each and
run dry in this process, in order, each with the calls it would make (no
saga is stored, nothing is published; compensations are not run). The
rancher-cluster and vcluster sagas are planned instead: a cluster create's
plan step runs (it reads the OpenStack catalog), and every step says what
it would make or remove.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := app.LoadPlan(*path)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			ex, err := app.ExplainOrder(ctx, plan, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			printExplain(out, ex)
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON instead of text")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "bound of the whole run")
	return c
}

// maxBody bounds a change's body in the text listing (--json has it
// whole).
const maxBody = 300

func printExplain(out io.Writer, ex *app.OrderExplanation) {
	fmt.Fprintf(out, "order %s: %s, %s\n", ex.Order, ex.Type, ex.State)
	fmt.Fprintf(out, "offering %s, backend %s", ex.Offering, ex.Backend)
	if ex.Resource != "" {
		fmt.Fprintf(out, ", resource %s", ex.Resource)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "calls, in order (reads were sent; changes were NOT sent):")
	changes := printCalls(out, "  ", ex.Calls)
	for _, r := range ex.Requests {
		changes++
		fmt.Fprintf(out, "  REQUEST %s\n", r)
	}
	if s := ex.Saga; s != nil {
		fmt.Fprintf(out, "saga %s (id %s, not stored); its steps would then run, each undone by its compensation when a later one fails\n", s.Definition, s.ID)
		if s.NotRun != "" {
			fmt.Fprintf(out, "(not run: %s)\n", s.NotRun)
		} else {
			fmt.Fprintln(out, "(run here in dry-run mode, in order; a step reads the platform as it is now, plus the Keycloak groups and Rancher objects the steps before it would make):")
		}
		for i, st := range s.Steps {
			comp := "nothing to undo"
			if st.Compensation != "" {
				comp = "undone by " + st.Compensation + ", not run"
			}
			fmt.Fprintf(out, "  %d. %s: %s (%s)\n", i+1, st.Name, st.Action, comp)
			if st.Does != "" {
				fmt.Fprintf(out, "       %s\n", st.Does)
			}
			if !st.Ran {
				if s.NotRun == "" {
					fmt.Fprintln(out, "       not run: a step before it would fail")
				}
				printCalls(out, "       ", st.Calls)
				if st.Error != "" {
					fmt.Fprintf(out, "       FAILS: %s\n", st.Error)
				}
				continue
			}
			for _, c := range st.Commands {
				fmt.Fprintf(out, "       command %s (in this process, not on the bus)\n", c)
			}
			changes += printCalls(out, "       ", st.Calls)
			if st.Error != "" {
				fmt.Fprintf(out, "       FAILS: %s\n", st.Error)
			}
		}
	}
	if m := ex.Membership; m != nil {
		// Not the order's: counted apart from its changes.
		fmt.Fprintln(out, "membership: the resource's team sync, which the update does not run (a team event or the periodic pass does), would now:")
		for _, c := range m.Commands {
			fmt.Fprintf(out, "  command %s (in this process, not on the bus)\n", c)
		}
		printCalls(out, "  ", m.Calls)
		if m.Error != "" {
			fmt.Fprintf(out, "  FAILS: %s\n", m.Error)
		} else {
			fmt.Fprintf(out, "  add %d, remove %d, leave %d pending (no Keycloak user yet)\n", m.Added, m.Removed, m.Pending)
		}
	}
	switch {
	case ex.Error != "":
		fmt.Fprintf(out, "the order would fail: %s\n", ex.Error)
	case ex.Outcome != "":
		fmt.Fprintf(out, "outcome: %s\n", outcomeWords(ex.Outcome))
	}
	if ex.Saga != nil && ex.Saga.NotRun != "" {
		fmt.Fprintf(out, "%d change(s) listed, and the saga's steps above; nothing was changed\n", changes)
		return
	}
	fmt.Fprintf(out, "%d change(s); nothing was changed\n", changes)
}

// printCalls lists calls, each line after indent, and counts the changes.
func printCalls(out io.Writer, indent string, calls []dryrun.Call) (changes int) {
	for _, c := range calls {
		target := c.Target + " " + c.Method + " " + c.Path
		if c.Query != "" {
			target += "?" + c.Query
		}
		switch {
		case c.Sent:
			fmt.Fprintf(out, "%sread    %s -> %d\n", indent, target, c.Status)
			continue
		case c.Answered:
			fmt.Fprintf(out, "%sread    %s -> empty, answered here (below an object this dry run would make)\n", indent, target)
			continue
		}
		changes++
		fmt.Fprintf(out, "%sCHANGE  %s", indent, target)
		if c.Body != "" {
			b := c.Body
			if len(b) > maxBody {
				b = b[:maxBody] + "…"
			}
			fmt.Fprintf(out, " %s", b)
		}
		fmt.Fprintln(out)
	}
	return changes
}

func outcomeWords(o string) string {
	switch o {
	case "done":
		return "done (the order is set done once the calls above succeed)"
	case "delegated":
		return "delegated (the saga above settles the order)"
	case "skipped":
		return "skipped (the order needs nothing from the site in its state)"
	}
	return o
}
