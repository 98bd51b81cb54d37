package cli

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

func eventsCmd() *cobra.Command {
	c := &cobra.Command{Use: "events", Short: "Look at the events stream"}
	var nf natsFlags
	var subject string
	var last int
	tail := &cobra.Command{
		Use:   "tail [--subject FILTER] [--last N]",
		Short: "Print events as they are stored, after the last N stored ones",
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, closeFn, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			ctx := cmd.Context()
			// waldur.<offering>.<type> also takes its partitioned subjects.
			cfg := jetstream.OrderedConsumerConfig{FilterSubjects: bus.EventFilters(subject), DeliverPolicy: jetstream.DeliverNewPolicy}
			if last > 0 {
				cfg.DeliverPolicy = jetstream.DeliverLastPolicy
				if st, err := b.JetStream().Stream(ctx, bus.EventsStream); err == nil {
					if info, err := st.Info(ctx); err == nil && info.State.LastSeq > uint64(last) {
						cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.State.LastSeq-uint64(last)+1
					} else if err == nil {
						cfg.DeliverPolicy = jetstream.DeliverAllPolicy
					}
				}
			}
			cons, err := b.JetStream().OrderedConsumer(ctx, bus.EventsStream, cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			cc, err := cons.Consume(func(m jetstream.Msg) {
				meta, _ := m.Metadata()
				var ev sitebusv1.WaldurEvent
				if err := proto.Unmarshal(m.Data(), &ev); err != nil {
					fmt.Fprintf(out, "%d %s undecodable: %v\n", meta.Sequence.Stream, m.Subject(), err)
					return
				}
				fmt.Fprintf(out, "%s #%d %-40s %-10s %s\n", meta.Timestamp.Local().Format(time.TimeOnly), meta.Sequence.Stream, m.Subject(), sourceName(ev.Source), ev.Body)
			})
			if err != nil {
				return err
			}
			defer cc.Stop()
			<-ctx.Done()
			return nil
		},
	}
	nf.add(tail)
	tail.Flags().StringVar(&subject, "subject", bus.EventsSubjects, "subject filter (waldur.<offering>.<object_type>, with * for any)")
	tail.Flags().IntVar(&last, "last", 10, "also print the last N stored events")
	c.AddCommand(tail)
	return c
}

func sourceName(s sitebusv1.EventSource) string {
	switch s {
	case sitebusv1.EventSource_EVENT_SOURCE_STOMP:
		return "stomp"
	case sitebusv1.EventSource_EVENT_SOURCE_RECONCILER:
		return "reconciler"
	case sitebusv1.EventSource_EVENT_SOURCE_REPLAY:
		return "replay"
	}
	return "?"
}
