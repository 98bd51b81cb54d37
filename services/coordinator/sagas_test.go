package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
)

// TestDefinitions is the table of every saga: its steps in order, each
// with the activity that does it and the one that undoes it.
func TestDefinitions(t *testing.T) {
	want := map[string][]string{
		contract.NamespaceCreate: {
			"groups keycloak-sync.ensure-groups keycloak-sync.delete-created-groups",
			"object order.create-object order.delete-created-object",
			"team membership.sync-resource -",
			"settle order.settle -",
		},
		contract.NamespaceTerminate: {
			"object order.delete-object -",
			"groups keycloak-sync.delete-groups -",
			"settle order.settle -",
		},
		contract.RancherProjectCreate: {
			"object order.create-object order.delete-created-object",
			"groups keycloak-sync.ensure-groups keycloak-sync.delete-created-groups",
			"binding order.bind-group order.unbind-created-group",
			"team membership.sync-resource -",
			"settle order.settle -",
		},
		contract.RancherProjectTerminate: {
			"binding order.unbind-group -",
			"object order.delete-object -",
			"groups keycloak-sync.delete-project-groups -",
			"settle order.settle -",
		},
	}
	acts := activities{}.all()
	used := map[string]bool{}
	var names []string
	for _, def := range contract.Definitions(42 * time.Second) {
		names = append(names, def.Name)
		if err := def.Validate(); err != nil {
			t.Errorf("%s: %v", def.Name, err)
		}
		var got []string
		for _, st := range def.Steps {
			comp := st.Compensation
			if comp == "" {
				comp = "-"
			}
			got = append(got, st.Name+" "+st.Action+" "+comp)
			for _, a := range []string{st.Action, st.Compensation} {
				if a == "" {
					continue
				}
				used[a] = true
				if _, ok := acts[a]; !ok {
					t.Errorf("%s step %s: activity %s is not registered", def.Name, st.Name, a)
				}
			}
			// A step's command waits for Keycloak or the platform: the
			// step timeout bounds it; retries are the step's, compensations
			// get more as they must not give up lightly.
			if st.Timeout != 42*time.Second || st.MaxAttempts != 5 || st.CompensationMaxAttempts != 10 {
				t.Errorf("%s step %s: timeout %s, attempts %d/%d", def.Name, st.Name, st.Timeout, st.MaxAttempts, st.CompensationMaxAttempts)
			}
		}
		if !slices.Equal(got, want[def.Name]) {
			t.Errorf("%s:\n%s\nwant\n%s", def.Name, strings.Join(got, "\n"), strings.Join(want[def.Name], "\n"))
		}
	}
	if !slices.Equal(names, contract.All) || len(names) != len(want) {
		t.Errorf("definitions %v, All %v", names, contract.All)
	}
	for a := range acts {
		if !used[a] {
			t.Errorf("activity %s is registered but no step uses it", a)
		}
	}
}

// TestAFailingStepCompensatesWhatTheSagaMade runs every saga on the real
// coordinator (embedded NATS) with one step's command refused for good,
// and checks the commands sent: the steps up to the failed one, then the
// compensations of the steps done, last first.
func TestAFailingStepCompensatesWhatTheSagaMade(t *testing.T) {
	const (
		ensure, delGroups, create, delObject = "keycloak-sync ensure-groups", "keycloak-sync delete-groups", "order create-object", "order delete-object"
		sync, syncCreated, settle            = "membership sync-resource", "membership sync-created-resource", "order settle-order"
		bind, unbind                         = "order bind-group", "order unbind-group"
	)
	tests := map[string]struct {
		definition string
		fail       string // the command refused
		// groupsExisted: ensure-groups found every group there;
		// objectExisted: create-object found the object there.
		groupsExisted, objectExisted, bindingExisted bool
		stillBound                                   int32
		want                                         []string
		wantStatus                                   saga.Status
	}{
		"a namespace create runs every step": {
			definition: contract.NamespaceCreate,
			want:       []string{ensure, create, sync, settle}, wantStatus: saga.StatusSucceeded,
		},
		"a namespace create whose groups fail has nothing to undo": {
			definition: contract.NamespaceCreate, fail: ensure,
			want: []string{ensure}, wantStatus: saga.StatusFailed,
		},
		"a namespace create whose object fails deletes the groups it made": {
			definition: contract.NamespaceCreate, fail: create,
			want: []string{ensure, create, delGroups}, wantStatus: saga.StatusCompensated,
		},
		"a namespace create whose object fails keeps groups that were there": {
			definition: contract.NamespaceCreate, fail: create, groupsExisted: true,
			want: []string{ensure, create}, wantStatus: saga.StatusCompensated,
		},
		"a namespace create whose team fails deletes the object, then the groups": {
			definition: contract.NamespaceCreate, fail: sync,
			want: []string{ensure, create, sync, delObject, delGroups}, wantStatus: saga.StatusCompensated,
		},
		"a namespace create whose settle fails keeps an object that was there": {
			definition: contract.NamespaceCreate, fail: settle, objectExisted: true,
			want: []string{ensure, create, sync, settle, delGroups}, wantStatus: saga.StatusCompensated,
		},
		"a namespace terminate has nothing to undo": {
			definition: contract.NamespaceTerminate, fail: delGroups,
			want: []string{delObject, delGroups}, wantStatus: saga.StatusFailed,
		},
		"a Rancher create runs every step": {
			definition: contract.RancherProjectCreate,
			want:       []string{create, ensure, bind, syncCreated, settle}, wantStatus: saga.StatusSucceeded,
		},
		"a Rancher create whose groups fail deletes the project": {
			definition: contract.RancherProjectCreate, fail: ensure,
			want: []string{create, ensure, delObject}, wantStatus: saga.StatusCompensated,
		},
		"a Rancher create whose binding fails deletes the groups, then the project": {
			definition: contract.RancherProjectCreate, fail: bind,
			want: []string{create, ensure, bind, delGroups, delObject}, wantStatus: saga.StatusCompensated,
		},
		"a Rancher create whose team fails unbinds, deletes the groups, then the project": {
			definition: contract.RancherProjectCreate, fail: syncCreated,
			want: []string{create, ensure, bind, syncCreated, unbind, delGroups, delObject}, wantStatus: saga.StatusCompensated,
		},
		"a Rancher create keeps a binding that was there before": {
			definition: contract.RancherProjectCreate, fail: syncCreated, bindingExisted: true,
			want: []string{create, ensure, bind, syncCreated, delGroups, delObject}, wantStatus: saga.StatusCompensated,
		},
		"a Rancher terminate deletes the groups no other project is bound to": {
			definition: contract.RancherProjectTerminate,
			want:       []string{unbind, delObject, delGroups, settle}, wantStatus: saga.StatusSucceeded,
		},
		"a Rancher terminate keeps groups another project is bound to": {
			definition: contract.RancherProjectTerminate, stillBound: 1,
			want: []string{unbind, delObject, settle}, wantStatus: saga.StatusSucceeded,
		},
		"a Rancher terminate whose project cannot be deleted has nothing to undo": {
			definition: contract.RancherProjectTerminate, fail: delObject,
			want: []string{unbind, delObject}, wantStatus: saga.StatusFailed,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, svc := newBus(t)
			if tc.fail != "" {
				svc.fail[tc.fail[strings.Index(tc.fail, " ")+1:]] = true
			}
			for _, g := range append(nsGroups, rancherGroups...) {
				svc.existing[g.Name] = tc.groupsExisted
			}
			svc.existed, svc.bindingExisted, svc.stillBound = tc.objectExisted, tc.bindingExisted, tc.stillBound
			sg := run(t, b, tc.definition, sagaInput(t, tc.definition))
			if sg.Status != tc.wantStatus {
				t.Errorf("status %s (%s), want %s", sg.Status, sg.Error, tc.wantStatus)
			}
			if got := svc.commands(); !slices.Equal(got, tc.want) {
				t.Errorf("commands\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A command that fails retryably (the platform unavailable for a moment)
// is delivered again by its service's consumer; the step waits for the
// answer and nothing is compensated.
func TestARetryableFailureIsRetriedNotCompensated(t *testing.T) {
	b, svc := newBus(t)
	svc.flaky[contract.CmdCreateObject] = true
	sg := run(t, b, contract.NamespaceCreate, sagaInput(t, contract.NamespaceCreate))
	if sg.Status != saga.StatusSucceeded {
		t.Errorf("status %s (%s), want succeeded", sg.Status, sg.Error)
	}
	want := []string{"keycloak-sync ensure-groups", "order create-object", "order create-object", "membership sync-resource", "order settle-order"}
	if got := svc.commands(); !slices.Equal(got, want) {
		t.Errorf("commands %v, want %v", got, want)
	}
}

func sagaInput(t *testing.T, definition string) contract.NamespaceInput {
	t.Helper()
	switch definition {
	case contract.NamespaceCreate:
		in, err := contract.NewCreateInput(createRequest(t), nsGroups)
		if err != nil {
			t.Fatal(err)
		}
		return in
	case contract.RancherProjectCreate:
		in, _ := contract.NewCreateInput(createRequest(t), rancherGroups)
		in.Bind = "project_physics_member"
		return in
	case contract.NamespaceTerminate:
		return contract.NamespaceInput{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceHex, Groups: nsGroups, BackendID: "obj-alpha"}
	}
	return contract.NamespaceInput{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceHex, Groups: rancherGroups,
		BackendID: "p-physics", Bind: "project_physics_member"}
}

// run runs one saga on the saga-coordinator service and waits for its end.
func run(t *testing.T, b *bus.Bus, definition string, in contract.NamespaceInput) saga.Saga {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.Default()
	}
	s, err := New(b, Config{Logger: log, Registerer: prometheus.NewRegistry(), StepTimeout: 30 * time.Second, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("coordinator: %v", err)
		}
	}()
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if _, err := s.coord.Start(wctx, definition, contract.SagaID(orderHex), in); err != nil {
		t.Fatal(err)
	}
	sg, err := s.coord.Wait(wctx, contract.SagaID(orderHex))
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if err := s.Ready(wctx); err != nil {
		t.Errorf("ready after a saga ran: %v", err)
	}
	return sg
}
