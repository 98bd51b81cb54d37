package orderflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// This file is the one place in sitebus's services that tells Waldur an
// order is done or erred. Each order gets one terminal transition: a run
// that finds the order settled already (a run before a crash, a saga, or
// another actor did it) leaves it alone, as the Python agent does.

// isNotFound and isConflict are Waldur's answers the lifecycle handles
// where they occur (pkg/waldur marks its 404 and 409 as these kinds).
func isNotFound(err error) bool { return errors.Is(err, fault.NotFound) }
func isConflict(err error) bool { return errors.Is(err, fault.Conflict) }

// markDone sets an order done. With readState it first reads the order
// and leaves one that is no longer executing alone (a saga's settle step:
// another actor may have settled it meanwhile); without, the caller read
// it executing while holding the order's key. Anyone else settling it
// meanwhile gets us a 409, which is fine.
func markDone(ctx context.Context, w Waldur, orderUUID string, readState bool) error {
	if readState {
		o, err := w.GetOrder(ctx, orderUUID, "uuid", "state")
		if err != nil {
			return fmt.Errorf("get order state: %w", err)
		}
		if o.State != waldur.OrderStateExecuting {
			return nil
		}
	}
	if err := w.SetOrderStateDone(ctx, orderUUID); err != nil && !isConflict(err) {
		return fmt.Errorf("set_state_done: %w", err)
	}
	return nil
}

// markErred tells Waldur why an order failed, unless Waldur shows it
// settled already or does not know it. A Waldur that cannot be reached is
// an error to retry; a cancelled context is the process stopping, not a
// failure to report.
func markErred(ctx context.Context, w Waldur, orderUUID, msg string, log *slog.Logger) error {
	log.Warn("order failed", "err", msg)
	o, err := w.GetOrder(ctx, orderUUID, "uuid", "state")
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get order state: %w", err)
	}
	if terminalOrderState(o.State) {
		log.Info("order is settled in Waldur already; not marking it erred", "state", o.State)
		return nil
	}
	err = w.SetOrderStateErred(ctx, orderUUID, msg, "")
	if err != nil && !isConflict(err) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("set_state_erred: %w", err)
	}
	return nil
}

func terminalOrderState(s string) bool {
	switch s {
	case waldur.OrderStateDone, waldur.OrderStateErred, waldur.OrderStateCanceled, waldur.OrderStateRejected:
		return true
	}
	return false
}

// offering is one of the Flow's offerings; another is a terminal error:
// no retry makes it configured here.
func (f *Flow) offering(hex string) (FlowOffering, error) {
	o, ok := f.offerings[hex]
	if !ok {
		return FlowOffering{}, fault.Terminal(fmt.Errorf("offering %s is not configured for orders here", hex))
	}
	return o, nil
}

// MarkDone sets an order of one of the Flow's offerings done if it is
// still executing: the settle step of a saga that runs outside the order
// service (the cluster-provisioner's) reports through it.
func (f *Flow) MarkDone(ctx context.Context, offeringUUID, orderUUID string) error {
	o, err := f.offering(offeringUUID)
	if err != nil {
		return err
	}
	if err := markDone(ctx, o.Waldur, orderUUID, true); err != nil {
		return err
	}
	f.outcomes.WithLabelValues("saga", outcomeDone).Inc()
	return nil
}

// MarkErred errs an order of one of the Flow's offerings if it is not
// settled yet, with message: the settle step of a saga that succeeded
// without a usable result (a cluster kept although Rancher never showed
// it active) reports through it; a failed saga's order is erred by
// watchOutcomes instead.
func (f *Flow) MarkErred(ctx context.Context, offeringUUID, orderUUID, message string) error {
	o, err := f.offering(offeringUUID)
	if err != nil {
		return err
	}
	if err := markErred(ctx, o.Waldur, orderUUID, message, f.log.With("order", orderUUID)); err != nil {
		return err
	}
	f.outcomes.WithLabelValues("saga", outcomeErred).Inc()
	return nil
}

// watchOutcomes errs the order of a saga that did not succeed: the saga's
// error says which step failed and what the platform said.
func (f *Flow) watchOutcomes(ctx context.Context) (*bus.Subscription, error) {
	var filters []string
	for _, def := range f.cfg.Sagas {
		for _, st := range []saga.Status{saga.StatusCompensated, saga.StatusFailed, saga.StatusParked} {
			filters = append(filters, saga.OutcomeSubject(st, def.Name))
		}
	}
	if err := f.starter.EnsureStream(ctx); err != nil {
		return nil, err
	}
	return bus.SubscribeRaw(ctx, f.bus, bus.ConsumerConfig{
		Name: f.cfg.OutcomesConsumer, Stream: saga.Stream, FilterSubjects: filters,
		MaxDeliver: f.cfg.MaxDeliver, Backoff: f.cfg.Backoff,
		OrderingKey: outcomeOrderKey,
	}, f.onOutcome)
}

// sagaOrder is what every order saga's input carries: whose order it is.
type sagaOrder struct {
	OfferingUUID string `json:"offering_uuid"`
	OrderUUID    string `json:"order_uuid"`
}

// outcomeOrderKey serialises a saga's outcome with the order's events and
// its settle command: all of them may settle the order.
func outcomeOrderKey(_ string, data []byte) string {
	var sg struct {
		Input sagaOrder `json:"input"`
	}
	if json.Unmarshal(data, &sg) != nil || !events.IsUUID(sg.Input.OrderUUID) {
		return ""
	}
	return events.OrderKey(sg.Input.OrderUUID)
}

func (f *Flow) onOutcome(ctx context.Context, data []byte) error {
	var sg saga.Saga
	if err := json.Unmarshal(data, &sg); err != nil {
		return fault.Terminal(fmt.Errorf("saga outcome: %w", err))
	}
	var in sagaOrder
	if err := json.Unmarshal(sg.Input, &in); err != nil {
		return fault.Terminal(fmt.Errorf("saga %s input: %w", sg.ID, err))
	}
	o, err := f.offering(in.OfferingUUID)
	if err != nil {
		return fmt.Errorf("saga %s: %w", sg.ID, err)
	}
	log := f.log.With("offering", o.Name, "order", in.OrderUUID, "saga", sg.ID)
	if err := markErred(ctx, o.Waldur, in.OrderUUID, outcomeMessage(sg), log); err != nil {
		return err
	}
	f.outcomes.WithLabelValues("saga", outcomeErred).Inc()
	return nil
}

// outcomeMessage is what Waldur shows for a saga that did not succeed:
// the step that failed and why, then what became of what it made.
func outcomeMessage(sg saga.Saga) string {
	if sg.Error == "" {
		return "saga " + sg.ID + " ended " + string(sg.Status)
	}
	switch sg.Status {
	case saga.StatusParked:
		return fmt.Sprintf("%s; undoing it failed too and is parked for an operator (sitebus sagas show %s): %s", sg.Error, sg.ID, sg.ParkReason)
	case saga.StatusCompensated:
		return sg.Error + "; everything this order made was removed"
	}
	return sg.Error
}
