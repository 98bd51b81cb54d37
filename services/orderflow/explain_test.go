package orderflow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Explain runs the lifecycle's own dispatch: what the verb would do comes
// back as the outcome, the saga it would start and the bus requests it
// would send, none of them started or sent.
func TestExplainReportsWhatTheLifecycleWouldDo(t *testing.T) {
	tests := map[string]struct {
		offering    Offering
		typ, slug   string
		wantOutcome string
		wantSaga    string
		wantRequest string
		wantErr     fault.Kind
	}{
		"a direct create is done and asks the membership service for the team": {
			offering: Offering{SyncTeam: true}, typ: waldur.OrderTypeCreate, slug: "alpha",
			wantOutcome: outcomeDone, wantRequest: "sync-resource to the membership service for resource " + resUUID + " (idempotency key created:" + orderUUID + ")",
		},
		"a create with access groups is delegated to its saga": {
			offering: Offering{Groups: roleGroups}, typ: waldur.OrderTypeCreate, slug: "alpha",
			wantOutcome: outcomeDelegated, wantSaga: contract.NamespaceCreate,
		},
		"a terminate with access groups is delegated to its saga": {
			offering: Offering{Groups: roleGroups}, typ: waldur.OrderTypeTerminate, slug: "alpha",
			wantOutcome: outcomeDelegated, wantSaga: contract.NamespaceTerminate,
		},
		"an update without the quota service's verb fails for good": {
			typ: waldur.OrderTypeUpdate, slug: "alpha", wantErr: fault.Invalid,
		},
		"a create of a name the backend refuses fails for good": {
			typ: waldur.OrderTypeCreate, slug: "Bad Name", wantErr: fault.Invalid,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := resource(tc.slug)
			res.BackendID = "ns-alpha"
			if tc.typ == waldur.OrderTypeCreate {
				res.BackendID = ""
			}
			w := newFakeWaldur(order(tc.typ, waldur.OrderStatePendingProvider), res)
			o := tc.offering
			o.Config = &config.Offering{Name: "test", WaldurOfferingUUID: offeringHex}
			o.Waldur, o.Backend = w, newFakeBackend()
			ex, err := Explain(context.Background(), Config{Offerings: []Offering{o}}, offeringHex, orderUUID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if !errors.Is(ex.Err, tc.wantErr) || !fault.IsTerminal(ex.Err) {
					t.Fatalf("error %v, want a terminal %s", ex.Err, tc.wantErr)
				}
				return
			}
			if ex.Err != nil || ex.Outcome != tc.wantOutcome || ex.Type != tc.typ {
				t.Fatalf("explained %s: outcome %q, error %v; want %q", ex.Type, ex.Outcome, ex.Err, tc.wantOutcome)
			}
			switch {
			case tc.wantSaga == "" && ex.Saga != nil:
				t.Errorf("saga %+v, want none", ex.Saga)
			case tc.wantSaga != "" && (ex.Saga == nil || ex.Saga.Definition != tc.wantSaga || ex.Saga.ID != contract.SagaID(strings.ReplaceAll(orderUUID, "-", ""))):
				t.Errorf("saga %+v, want %s for the order", ex.Saga, tc.wantSaga)
			}
			if got := strings.Join(ex.Requests, "\n"); got != tc.wantRequest {
				t.Errorf("requests %q, want %q", got, tc.wantRequest)
			}
		})
	}
}

func TestExplainRefusesAnOfferingItDoesNotServe(t *testing.T) {
	o := Offering{Config: &config.Offering{Name: "test", WaldurOfferingUUID: offeringHex}, Waldur: newFakeWaldur(nil, nil), Backend: newFakeBackend()}
	_, err := Explain(context.Background(), Config{Offerings: []Offering{o}}, "00000000000040008000000000000001", orderUUID, nil)
	if err == nil || !strings.Contains(err.Error(), "has no order_processing_backend here") {
		t.Fatalf("error %v, want the offering named as not served", err)
	}
}
