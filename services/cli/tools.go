package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// parseSince accepts an RFC 3339 time or a duration back from now ("2h").
func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q is neither an RFC 3339 time nor a duration like 2h", s)
	}
	return t, nil
}

func replayCmd() *cobra.Command {
	var nf natsFlags
	var o bus.ReplayOptions
	var since string
	c := &cobra.Command{
		Use:   "replay --subject FILTER (--since TIME | --from-seq N) [--dry-run]",
		Short: "Re-deliver stored events to the services (handlers are idempotent)",
		Example: "  sitebus replay --subject 'waldur.*.order' --since 2h --dry-run\n" +
			"  sitebus replay --subject 'waldur.0a1b....order' --from-seq 1200",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Since, err = parseSince(since); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			out := cmd.OutOrStdout()
			n, err := b.Replay(cmd.Context(), o, func(r bus.Replayed) {
				if o.DryRun {
					fmt.Fprintf(out, "would replay seq %d %s (%s)\n", r.Seq, r.Subject, r.Time.Format(time.RFC3339))
				} else {
					fmt.Fprintf(out, "replayed seq %d %s as seq %d\n", r.Seq, r.Subject, r.NewSeq)
				}
			})
			verb := "replayed"
			if o.DryRun {
				verb = "would replay"
			}
			fmt.Fprintf(out, "%s %d message(s)\n", verb, n)
			return err
		},
	}
	nf.add(c)
	f := c.Flags()
	f.StringVar(&o.Subject, "subject", "", "subject filter, e.g. waldur.*.order")
	f.StringVar(&since, "since", "", "start time: RFC 3339 or a duration back from now (2h)")
	f.Uint64Var(&o.FromSeq, "from-seq", 0, "start at this stream sequence")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be re-delivered")
	return c
}

func dlqCmd() *cobra.Command {
	c := &cobra.Command{Use: "dlq", Short: "Inspect, retry and purge dead letters"}
	var nf natsFlags
	var source string
	var limit int
	filter := func() string {
		if source == "" {
			return ""
		}
		return "dlq." + source + ".>"
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List parked messages",
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			dls, err := b.DeadLetters(cmd.Context(), filter(), limit)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SEQ\tPARKED\tSOURCE\tSUBJECT\tTRIES\tREASON")
			for _, d := range dls {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\n", d.Seq, d.Time.Format(time.RFC3339), d.Source, orDash(d.Subject), d.Deliveries, oneLine(d.Reason, 100))
			}
			return w.Flush()
		},
	}
	list.Flags().IntVar(&limit, "limit", 0, "show at most this many (0: all)")
	show := &cobra.Command{
		Use:   "show SEQ",
		Short: "Show one parked message with its headers and payload",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("SEQ %q is not a number", args[0])
			}
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			d, err := b.DeadLetter(cmd.Context(), seq)
			if err != nil {
				return err
			}
			return printDeadLetter(cmd.OutOrStdout(), d)
		},
	}
	retry := &cobra.Command{
		Use:   "retry SEQ...",
		Short: "Put parked messages back on their original subject",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			var failed int
			for _, a := range args {
				seq, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					return fmt.Errorf("SEQ %q is not a number", a)
				}
				ack, err := b.RetryDeadLetter(cmd.Context(), seq)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "dead letter %d: %v\n", seq, err)
					failed++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "dead letter %d re-published as %s seq %d\n", seq, ack.Stream, ack.Sequence)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d retries failed", failed, len(args))
			}
			return nil
		},
	}
	var yes bool
	purge := &cobra.Command{
		Use:   "purge --yes [--source S]",
		Short: "Delete parked messages",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return fmt.Errorf("purge deletes dead letters for good; pass --yes to confirm")
			}
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			n, err := b.PurgeDeadLetters(cmd.Context(), filter())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "purged %d dead letter(s)\n", n)
			return nil
		},
	}
	purge.Flags().BoolVar(&yes, "yes", false, "confirm")
	for _, sc := range []*cobra.Command{list, show, retry, purge} {
		nf.add(sc)
		c.AddCommand(sc)
	}
	for _, sc := range []*cobra.Command{list, purge} {
		sc.Flags().StringVar(&source, "source", "", "only letters from this consumer or component (e.g. stomp-bridge)")
	}
	return c
}

func printDeadLetter(w io.Writer, d bus.DeadLetter) error {
	fmt.Fprintf(w, "seq:        %d\nparked:     %s\nsource:     %s\nreason:     %s\nsubject:    %s\noriginal:   %s seq %d\ndeliveries: %d\nheaders:\n",
		d.Seq, d.Time.Format(time.RFC3339Nano), d.Source, d.Reason, orDash(d.Subject), orDash(d.Stream), d.StreamSeq, d.Deliveries)
	for k, vs := range d.Header {
		fmt.Fprintf(w, "  %s: %s\n", k, strings.Join(vs, ", "))
	}
	fmt.Fprintf(w, "payload:\n%s\n", describePayload(d.Header.Get(bus.HeaderMessageType), d.Data))
	return nil
}

// describePayload renders a WaldurEvent as JSON (with its body as text) and
// anything else as quoted bytes.
func describePayload(msgType string, data []byte) string {
	if msgType == "sitebus.v1.WaldurEvent" {
		var ev sitebusv1.WaldurEvent
		if proto.Unmarshal(data, &ev) == nil {
			j, _ := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&ev)
			return string(j) + "\nbody (verbatim): " + string(ev.Body)
		}
	}
	b, _ := json.Marshal(string(data))
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
