// Package cli holds sitebus's commands: run, and the operator tools for
// replaying events and handling dead letters.
package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/services/app"
)

// New returns the root command.
func New(version string) *cobra.Command {
	root := &cobra.Command{
		Use:           "sitebus",
		Short:         "Connects the Waldur marketplace to Kubernetes platforms",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(versionCmd(version), runCmd(version), replayCmd(), dlqCmd(), eventsCmd(), configCmd(), sagasCmd(), diagnosticsCmd(), loadComponentsCmd(), migrateCmd(), driftCmd(), ordersCmd())
	return root
}

func runCmd(version string) *cobra.Command {
	o := app.Options{Version: version, HealthChecks: statusChecks}
	var only string
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the services (all of them, with an embedded NATS server, by default)",
		Long: `Run the services (all of them, with an embedded NATS server, by default).

--mode (-m) takes the Python agent's mode names, so that a unit written as
"waldur_site_agent -m MODE -c FILE" runs as "sitebus run -m MODE -c FILE".
A mode runs the services doing that mode's work and every service they send
commands to, so one process finishes what it starts:

` + app.ModesHelp() + `
Without --mode or --only every service runs (not only order_process, the
Python agent's default mode). Several processes of one site share a NATS
server or cluster (--nats-url), as with --only.

The log level is --log-level, else WALDUR_LOG_LEVEL, else the file's
log_level, else INFO: DEBUG, INFO, WARNING, ERROR or CRITICAL, any case.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if only != "" {
				o.Only = strings.Split(only, ",")
			}
			return app.Run(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "waldur-site-agent-config.yaml", "configuration file (the Python agent's format)")
	// The Python agent's long spelling of -c, for units that use it.
	f.StringVar(&o.ConfigPath, "config-file", "waldur-site-agent-config.yaml", "the same as --config (the Python agent's name for it)")
	f.StringVarP(&o.Mode, "mode", "m", "", "run the services of one of the Python agent's modes: "+strings.Join(app.ModeNames, ", ")+" (not with --only)")
	f.StringVar(&o.LogLevel, "log-level", "", "log level, over "+config.EnvLogLevel+" and the file's log_level: DEBUG, INFO, WARNING, ERROR or CRITICAL")
	f.StringVar(&o.NATSURL, "nats-url", "", "external NATS server or cluster (default: embedded server)")
	f.StringVar(&o.NATSListen, "nats-listen", "127.0.0.1:4222", "client address of the embedded NATS server")
	f.StringVar(&o.DataDir, "data-dir", "", "directory for the embedded server's JetStream store")
	f.StringVar(&o.HTTPAddr, "http-addr", "", "address for /healthz, /readyz and /metrics")
	f.StringVar(&only, "only", "", "comma-separated services to run (known: "+strings.Join(app.ServiceNames, ", ")+")")
	return c
}

// natsFlags are shared by the tools that talk to a running sitebus's NATS.
type natsFlags struct{ url string }

func (n *natsFlags) add(c *cobra.Command) {
	def := os.Getenv("SITEBUS_NATS_URL")
	if def == "" {
		def = "nats://127.0.0.1:4222"
	}
	c.Flags().StringVar(&n.url, "nats-url", def, "NATS server of the running sitebus (env SITEBUS_NATS_URL)")
}

func (n *natsFlags) connect(ctx context.Context) (*bus.Bus, func(), error) {
	nc, err := nats.Connect(n.url, nats.Name("sitebus-cli"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", n.url, err)
	}
	b, err := bus.New(nc, bus.Config{})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return b, nc.Close, nil
}

func configCmd() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Configuration tools"}
	var path, natsURL string
	check := &cobra.Command{
		Use:   "check",
		Short: "Load and validate a configuration file as `sitebus run` does; print what sitebus would do with it",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The same parsing and checks as Run: what passes here starts.
			plan, err := app.LoadPlan(path)
			if err != nil {
				return err
			}
			if natsURL != "" {
				plan.Config.Sitebus.NATSURL = natsURL
			}
			// The replica count against the cluster, when it answers soon.
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			streams, err := app.CheckReplicas(ctx, plan.Config)
			if err != nil {
				return err
			}
			printPlan(cmd.OutOrStdout(), path, plan)
			fmt.Fprintln(cmd.OutOrStdout(), streams)
			fmt.Fprintln(cmd.OutOrStdout(), app.DescribeOrdering(plan.Config))
			return nil
		},
	}
	check.Flags().StringVarP(&path, "config", "c", "waldur-site-agent-config.yaml", "configuration file")
	check.Flags().StringVar(&natsURL, "nats-url", "", "external NATS server or cluster, as for run (default: the file's nats_url)")
	c.AddCommand(check)
	return c
}

// printPlan says what sitebus would do with a configuration. It shows no
// secret: credentials are named by their key at most.
func printPlan(out io.Writer, path string, plan *app.Plan) {
	cfg := plan.Config
	for _, w := range plan.Warnings {
		fmt.Fprintln(out, w.Error())
	}
	fmt.Fprintf(out, "%s: %d offering(s)\n", path, len(cfg.Offerings))
	for _, op := range plan.Offerings {
		o := op.Config
		auth := "token"
		if o.WaldurAPIToken == "" {
			auth = "oidc"
		}
		fmt.Fprintf(out, "- %s (%s) backend=%s auth=%s stomp=%v object types: %s\n", o.Name, o.OfferingUUIDHex(), o.BackendType, auth, o.StompEnabled, strings.Join(o.ObservableObjectTypes(), ","))
		fmt.Fprintf(out, "  modes: order=%q membership=%q reporting=%q\n", o.OrderProcessingBackend, o.MembershipSyncBackend, o.ReportingBackend)
		if o.BackendType == managedns.Type {
			s := op.ManagedNS
			kube := s.KubeconfigPath
			if kube == "" {
				kube = "in-cluster"
			}
			fmt.Fprintf(out, "  ManagedNamespaces in %q named %q + slug (kubeconfig %s)\n", s.CRNamespace, s.NamespacePrefix, kube)
		}
		if kc := op.Keycloak; kc != nil {
			fmt.Fprintf(out, "  keycloak: %s realm %q as %q (realm %q)\n", redactURL(kc.URL), kc.Realm, kc.Username, kc.UserRealm)
		}
	}
	fmt.Fprintf(out, "periods: order %s, membership %s, report %s\n", cfg.Periods.OrderProcess, cfg.Periods.MembershipSync, cfg.Periods.Report)
	fmt.Fprintf(out, "log level: %s (from %s)\n", cfg.LogLevel, cfg.LogLevelSource())
}

// redactURL hides a password written into a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
