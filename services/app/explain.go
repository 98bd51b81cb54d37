package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/coordinator"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/stompbridge"
)

// OrderExplanation is what an order would do (sitebus orders explain):
// the calls its handler makes and the saga it starts, found by running
// the order lifecycle's code for it with every client in dry-run mode
// (package dryrun: reads are sent, changes are only recorded).
type OrderExplanation struct {
	Order    string `json:"order"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Offering string `json:"offering"`
	Backend  string `json:"backend"`
	Resource string `json:"resource,omitempty"`
	// Outcome is what the order lifecycle would do with the order: done,
	// delegated (to Saga) or skipped.
	Outcome string `json:"outcome,omitempty"`
	// Calls are every request the handler made, in order; those with
	// sent false would change something and were not sent.
	Calls []dryrun.Call `json:"calls"`
	// Saga is the saga the order would start, with its steps.
	Saga *ExplainedSaga `json:"saga,omitempty"`
	// Requests are requests to other sitebus services on the bus.
	Requests []string `json:"bus_requests,omitempty"`
	// Error is why the order would fail.
	Error string `json:"error,omitempty"`
	// Membership, for an update of a resource whose offering syncs its
	// team (membership_sync_backend), is what the membership sync of the
	// resource would move now: the Keycloak group members it would add
	// and remove. The update itself does not run it (the membership
	// service does, on a team event or its periodic pass), so its calls
	// are not among the order's.
	Membership *ExplainedMembership `json:"membership,omitempty"`
}

// ExplainedMembership is the membership sync of one resource, run dry.
type ExplainedMembership struct {
	// Commands are the commands it sent (membership.sync-resource, then
	// keycloak-sync's), in this process.
	Commands []string `json:"commands,omitempty"`
	// Calls are its requests, as in OrderExplanation.Calls.
	Calls []dryrun.Call `json:"calls,omitempty"`
	// Added, Removed and Pending count the members it would add, remove,
	// and keep waiting for their Keycloak user.
	Added   int32 `json:"added"`
	Removed int32 `json:"removed"`
	Pending int32 `json:"pending"`
	// Error is why the sync would fail.
	Error string `json:"error,omitempty"`
}

// ExplainedSaga is a saga an order would start: its definition's steps in
// order, each with the compensation that undoes it when a later step
// fails.
type ExplainedSaga struct {
	Definition string          `json:"definition"`
	ID         string          `json:"id"`
	Input      any             `json:"input"`
	Steps      []ExplainedStep `json:"steps"`
	// Plan is a rancher-cluster create's plan, as its plan step computes
	// it.
	Plan json.RawMessage `json:"plan,omitempty"`
	// NotRun says why the steps were not run dry (the cluster sagas):
	// each then says what it would do (Does).
	NotRun string `json:"not_run,omitempty"`
}

// ExplainedStep is one step of a saga and, when it was run dry, what it
// did: the commands its activity sent (to services run in this process,
// not on the bus) and the calls their handlers made. Compensations are
// listed, never run.
type ExplainedStep struct {
	Name         string `json:"name"`
	Action       string `json:"action"`
	Compensation string `json:"compensation,omitempty"`
	// Ran: the step's action was run dry. A step after one that would
	// fail is not run (the saga would compensate instead).
	Ran bool `json:"ran"`
	// Commands are the commands the action sent (service.command), in
	// order, including those their handlers sent on (membership to
	// keycloak-sync).
	Commands []string `json:"commands,omitempty"`
	// Calls are the requests the handlers made, as in
	// OrderExplanation.Calls.
	Calls []dryrun.Call `json:"calls,omitempty"`
	// Output is the step's answer, as later steps and its compensation
	// would see it.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is why the step would fail.
	Error string `json:"error,omitempty"`
	// Does is what a step that is not run would make or remove, by the
	// names the step gives them (the cluster sagas).
	Does string `json:"does,omitempty"`
}

// ErrUnknownOrder is ExplainOrder's error for an order no Waldur of the
// configuration knows.
var ErrUnknownOrder = errors.New("no Waldur of this configuration knows the order")

// ExplainOrder reads the order from Waldur, finds the offering of the
// configuration it belongs to, and has the order lifecycle handle it as
// `sitebus run` would, with every client (Waldur, the backend's platform)
// in dry-run mode: nothing is changed.
func ExplainOrder(ctx context.Context, plan *Plan, orderUUID string) (*OrderExplanation, error) {
	if !events.IsUUID(orderUUID) {
		return nil, fmt.Errorf("%q is not an order UUID", orderUUID)
	}
	discard := slog.New(slog.DiscardHandler)
	rec := &dryrun.Recorder{}
	var offerings []stompbridge.Offering
	for _, op := range plan.Offerings {
		wc := op.Waldur
		wc.Logger = discard
		wc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return rec.Wrap(rt, "waldur") }
		c, err := waldur.New(wc)
		if err != nil {
			return nil, fmt.Errorf("offering %q: %w", op.Config.Name, err)
		}
		offerings = append(offerings, stompbridge.Offering{Config: op.Config, Waldur: c})
	}
	order, err := findOrder(ctx, plan, offerings, orderUUID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(plan.Offerings, func(op OfferingPlan) bool {
		return op.Config.OfferingUUIDHex() == events.HexUUID(order.OfferingUUID)
	})
	if i < 0 {
		return nil, fmt.Errorf("order %s is of offering %q (%s), which this configuration does not serve (it serves %s)",
			orderUUID, order.OfferingName, order.OfferingUUID, servedOfferings(plan))
	}
	op := &plan.Offerings[i]
	name := op.Config.OrderProcessingBackend
	if name == "" {
		return nil, fmt.Errorf("offering %q has no order_processing_backend: sitebus does not process its orders", op.Config.Name)
	}
	// The lookup's read is not the handler's: the listing starts with
	// the handler's own read of the order.
	rec.Reset()
	d := &deps{cfg: plan.Config, plan: plan, offerings: offerings, log: discard,
		transport: rec.Wrap}
	d.backends.d = d
	if clusterBackend(name) || sagaOrders(name) {
		return d.explainClusterOrder(ctx, rec, op, order)
	}
	all, err := d.orderOfferings()
	if err != nil {
		return nil, err
	}
	steps, err := d.stepHandlers()
	if err != nil {
		return nil, err
	}
	hex := op.Config.OfferingUUIDHex()
	ex, err := orderflow.Explain(ctx, orderflow.Config{Offerings: all, Logger: discard}, hex, orderUUID, steps)
	if err != nil {
		return nil, err
	}
	out := explanation(op, order, ex, rec)
	if ex.Saga != nil {
		out.Saga = explainSaga(ex.Saga, contract.Definitions(0))
		if err := runSteps(ctx, out.Saga, steps, rec); err != nil {
			return nil, err
		}
	}
	if order.Type == waldur.OrderTypeUpdate && op.Config.MembershipSyncBackend != "" && out.Resource != "" {
		out.Membership = explainMembership(ctx, steps, rec, hex, out.Resource)
	}
	return out, nil
}

// explainMembership runs the membership sync of the resource dry, as the
// membership service runs it on a team event, through the handlers in l:
// what it would add to and remove from the resource's groups now.
func explainMembership(ctx context.Context, l *contract.Local, rec *dryrun.Recorder, offeringHex, resourceUUID string) *ExplainedMembership {
	calls, sent := len(rec.Calls()), len(l.Sent())
	resp, err := contract.SyncResource.Call(ctx, l, &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resourceUUID})
	out := &ExplainedMembership{Calls: rec.Calls()[calls:], Commands: l.Sent()[sent:]}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Added, out.Removed, out.Pending = resp.GetAdded(), resp.GetRemoved(), resp.GetPending()
	return out
}

// stepHandlers are the commands of the services a saga's steps reach
// (keycloak-sync and membership here; the order service's are added by
// orderflow.Explain), built as `sitebus run` builds them, with the
// dry-run transports, and answered in this process.
func (d *deps) stepHandlers() (*contract.Local, error) {
	l := &contract.Local{}
	kos, err := d.keycloakOfferings()
	if err != nil {
		return nil, err
	}
	kc, err := keycloaksync.New(nil, keycloaksync.Config{Offerings: kos, Logger: d.log})
	if err != nil {
		return nil, err
	}
	kc.Handle(l)
	mos, err := d.membershipOfferings()
	if err != nil {
		return nil, err
	}
	ms, err := membership.New(nil, membership.Config{Offerings: mos, Logger: d.log})
	if err != nil {
		return nil, err
	}
	ms.Handle(l)
	return l, nil
}

// runSteps runs the saga's steps in order as the coordinator would (each
// step's activity, with the outputs of the steps before it), through the
// services' handlers in this process, and keeps what each did. Nothing is
// stored and nothing is published: the saga exists only here. It stops at
// the first step that fails, where the coordinator would compensate.
func runSteps(ctx context.Context, s *ExplainedSaga, l *contract.Local, rec *dryrun.Recorder) error {
	input, err := json.Marshal(s.Input)
	if err != nil {
		return fmt.Errorf("saga %s: input: %w", s.ID, err)
	}
	acts := coordinator.Activities(l)
	outputs := map[string]json.RawMessage{}
	for i := range s.Steps {
		st := &s.Steps[i]
		act := acts[st.Action]
		if act == nil {
			return fmt.Errorf("saga %s: step %s: no activity %s", s.ID, st.Name, st.Action)
		}
		calls, sent := len(rec.Calls()), len(l.Sent())
		out, err := act(ctx, saga.ActivityInput{SagaID: s.ID, Definition: s.Definition, Step: st.Name, Attempt: 1,
			Input: input, Outputs: maps.Clone(outputs)})
		st.Ran, st.Calls, st.Commands = true, rec.Calls()[calls:], l.Sent()[sent:]
		if err != nil {
			st.Error = err.Error()
			return nil
		}
		outputs[st.Name], st.Output = out, out
	}
	return nil
}

// findOrder reads the order from the Waldur of each offering (once per
// Waldur) until one knows it.
func findOrder(ctx context.Context, plan *Plan, offerings []stompbridge.Offering, orderUUID string) (*waldur.Order, error) {
	seen := map[string]bool{}
	for i, op := range plan.Offerings {
		if seen[op.Config.WaldurAPIURL] {
			continue
		}
		seen[op.Config.WaldurAPIURL] = true
		o, err := offerings[i].Waldur.GetOrder(ctx, orderUUID)
		switch {
		case err == nil:
			return o, nil
		case errors.Is(err, fault.NotFound):
			continue
		default:
			return nil, fmt.Errorf("read order %s from %s: %w", orderUUID, op.Config.WaldurAPIURL, err)
		}
	}
	return nil, fmt.Errorf("order %s: %w (asked %s)", orderUUID, ErrUnknownOrder, strings.Join(mapsKeys(seen), ", "))
}

func mapsKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func servedOfferings(plan *Plan) string {
	names := make([]string, 0, len(plan.Offerings))
	for _, op := range plan.Offerings {
		names = append(names, fmt.Sprintf("%q (%s)", op.Config.Name, op.Config.WaldurOfferingUUID))
	}
	return strings.Join(names, ", ")
}

// explanation is what handling the order did (ex), before any saga step.
func explanation(op *OfferingPlan, order *waldur.Order, ex orderflow.Explained, rec *dryrun.Recorder) *OrderExplanation {
	out := &OrderExplanation{Order: order.UUID, Type: order.Type, State: order.State,
		Offering: fmt.Sprintf("%s (%s)", op.Config.Name, op.Config.WaldurOfferingUUID), Backend: op.Config.OrderProcessingBackend,
		Resource: order.MarketplaceResourceUUID, Outcome: ex.Outcome, Calls: rec.Calls(), Requests: ex.Requests}
	if out.Resource == "" {
		out.Resource = order.ResourceUUID
	}
	if ex.Err != nil {
		out.Error = ex.Err.Error()
		if fault.IsTerminal(ex.Err) {
			out.Error += " (terminal: the run marks the order erred)"
		} else {
			out.Error += " (the run retries, then marks the order erred)"
		}
	}
	return out
}

// explainClusterOrder explains an order of a rancher-cluster or vcluster
// offering: the cluster-provisioner's order lifecycle handles it with
// dry-run clients, and the saga it would start is planned, not run (see
// provisioner.PlannedSaga): the rancher-cluster create's plan step runs,
// reading the OpenStack catalog; every other step says what it would
// make or remove, by the names the steps give their objects.
func (d *deps) explainClusterOrder(ctx context.Context, rec *dryrun.Recorder, op *OfferingPlan, order *waldur.Order) (*OrderExplanation, error) {
	clusters, err := d.clusterOfferings()
	if err != nil {
		return nil, err
	}
	vclusters, err := d.vclusterOfferings()
	if err != nil {
		return nil, err
	}
	hex := op.Config.OfferingUUIDHex()
	var fo []orderflow.FlowOffering
	for _, o := range d.offerings {
		h := o.Config.OfferingUUIDHex()
		if po, ok := clusters[h]; ok {
			fo = append(fo, orderflow.FlowOffering{UUID: h, Name: po.Name, Waldur: o.Waldur,
				Handler: clusterVerbs(func(ctx context.Context, offeringUUID string, order *waldur.Order) (provisioner.Input, error) {
					return provisioner.InputOf(ctx, po, offeringUUID, order)
				})})
		}
		if vo, ok := vclusters[h]; ok {
			fo = append(fo, orderflow.FlowOffering{UUID: h, Name: vo.Name, Waldur: o.Waldur, Handler: vclusterVerbs(vo, h, nil)})
		}
	}
	ex, err := orderflow.ExplainFlow(ctx, orderflow.FlowConfig{Name: provisioner.Name, Sagas: provisioner.Definitions(),
		Offerings: fo, Logger: d.log}, hex, order.UUID)
	if err != nil {
		return nil, err
	}
	out := explanation(op, order, ex, rec)
	if ex.Saga == nil {
		return out, nil
	}
	out.Saga = explainSaga(ex.Saga, provisioner.Definitions())
	calls := len(rec.Calls())
	var planned *provisioner.PlannedSaga
	switch in := ex.Saga.Input.(type) {
	case provisioner.Input:
		planned, err = provisioner.ExplainCluster(ctx, clusters[hex], ex.Saga.Definition, in)
	case provisioner.VClusterInput:
		planned, err = provisioner.ExplainVCluster(vclusters[hex], ex.Saga.Definition, in)
	default:
		return nil, fmt.Errorf("saga %s: input %T", ex.Saga.Definition, ex.Saga.Input)
	}
	out.Saga.NotRun = "the steps make what the next ones need (tenants, a cluster and its token, VMs that boot and register), " +
		"which a dry run cannot make: each step says what it would do, and its OpenStack, Rancher, Vault and Kubernetes calls are not listed"
	for i := range out.Saga.Steps {
		st := &out.Saga.Steps[i]
		if i == 0 {
			// The first step is the plan: its reads (the OpenStack
			// catalog, for a create) are the ones made just now.
			st.Calls = rec.Calls()[calls:]
			if err != nil {
				st.Ran, st.Error = true, err.Error()
				break
			}
			st.Ran = planned.Plan != nil
		}
		if planned != nil {
			st.Does = planned.Steps[st.Name]
		}
	}
	if planned != nil {
		out.Saga.Plan = planned.Plan
	}
	return out, nil
}

// explainSaga adds the steps of the saga's definition (one of defs), as
// the coordinator runs it.
func explainSaga(s *orderflow.StartedSaga, defs []saga.Definition) *ExplainedSaga {
	out := &ExplainedSaga{Definition: s.Definition, ID: s.ID, Input: s.Input, Steps: []ExplainedStep{}}
	for _, def := range defs {
		if def.Name != s.Definition {
			continue
		}
		for _, st := range def.Steps {
			out.Steps = append(out.Steps, ExplainedStep{Name: st.Name, Action: st.Action, Compensation: st.Compensation})
		}
	}
	return out
}
