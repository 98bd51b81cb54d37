package stompbridge

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// pendingOrderStates are the states in which an order waits for the site.
var pendingOrderStates = []string{"pending-provider", "executing"}

// reconcileLoop publishes an order event for every pending order of the
// offering, now, then every OrderPollPeriod and whenever kick asks (the
// offering's order subscription became active). For an offering without
// STOMP this is how orders arrive at all (the Python agent's order_process
// mode); with STOMP it catches frames the broker lost or never had a
// queue for.
func (br *Bridge) reconcileLoop(ctx context.Context, o Offering, kick <-chan struct{}) {
	t := time.NewTicker(br.cfg.OrderPollPeriod)
	defer t.Stop()
	for {
		if err := br.reconcileOnce(ctx, o); err != nil && ctx.Err() == nil {
			br.log.Error("order reconciliation failed; next try at the next period", "offering", o.Config.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// resyncOrders asks o's reconciler for a pass; one already asked for
// covers this request too.
func (br *Bridge) resyncOrders(o Offering) {
	select {
	case br.resync[o.Config] <- struct{}{}:
	default:
	}
}

func (br *Bridge) reconcileOnce(ctx context.Context, o Offering) error {
	ctx, span := br.tracer.Start(ctx, "reconcile orders")
	defer span.End()
	offHex := o.Config.OfferingUUIDHex()
	span.SetAttributes(attribute.String("waldur.offering_uuid", offHex))
	orders, err := o.Waldur.ListOrders(ctx, waldur.OrderFilter{OfferingUUID: o.Config.WaldurOfferingUUID, States: pendingOrderStates})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	published := 0
	for _, ord := range orders {
		if !events.IsUUID(ord.UUID) {
			br.log.Warn("Waldur listed an order with an invalid UUID; skipped", "offering", o.Config.Name, "uuid", ord.UUID)
			continue
		}
		orderHex := events.HexUUID(ord.UUID)
		body, _ := json.Marshal(events.OrderMessage{OrderUUID: orderHex, OrderState: ord.State, OfferingUUID: offHex})
		ev := &sitebusv1.WaldurEvent{
			ObjectType: events.Order, OfferingUuid: offHex, Body: body, Destination: "reconciler",
			// One event per order and state within the dedupe window: polling
			// every few minutes does not flood the stream, and a state change
			// is a new event.
			MessageId:  "reconcile:order:" + orderHex + ":" + ord.State,
			ReceivedAt: timestamppb.Now(), Source: sitebusv1.EventSource_EVENT_SOURCE_RECONCILER,
		}
		key := events.OrderKey(orderHex)
		subject, err := bus.EventSubject(offHex, events.Order, key)
		if err != nil {
			return err
		}
		ack, err := br.bus.Publish(ctx, subject, ev, bus.WithMsgID(ev.MessageId), bus.WithOrderingKey(key))
		if err != nil {
			return err
		}
		if ack.Duplicate {
			br.metrics.reconciled.WithLabelValues("duplicate").Inc()
			continue
		}
		published++
		br.metrics.reconciled.WithLabelValues("published").Inc()
	}
	br.log.Info("orders reconciled", "offering", o.Config.Name, "pending", len(orders), "published", published)
	return nil
}
