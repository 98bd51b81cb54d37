package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/services/orderflow"
)

// stepServices answer the namespace-create saga's commands as fakes of
// the services: each makes one call to the platform through the dry-run
// recorder, so the test sees which step a call is listed under.
type stepServices struct {
	platform *http.Client
	url      string
	settled  *sitebusv1.SettleOrderRequest
	failTeam bool
}

func (f *stepServices) call(ctx context.Context, method, path string) error {
	req, err := http.NewRequestWithContext(ctx, method, f.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := f.platform.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (f *stepServices) handle(l *contract.Local) {
	contract.Handle(l, contract.EnsureGroups, func(ctx context.Context, req *sitebusv1.EnsureGroupsRequest) (*sitebusv1.EnsureGroupsResponse, error) {
		out := &sitebusv1.EnsureGroupsResponse{}
		for _, g := range req.Groups {
			if err := f.call(ctx, http.MethodPost, "/groups/"+g.Name); err != nil {
				return nil, err
			}
			out.Groups = append(out.Groups, &sitebusv1.EnsuredGroup{Name: g.Name, Created: true})
		}
		return out, nil
	})
	contract.Handle(l, contract.CreateObject, func(ctx context.Context, req *sitebusv1.CreateObjectRequest) (*sitebusv1.CreateObjectResponse, error) {
		return &sitebusv1.CreateObjectResponse{BackendId: "ns-" + req.GetResource().GetSlug()}, f.call(ctx, http.MethodPost, "/namespaces")
	})
	contract.Handle(l, contract.SyncResource, func(ctx context.Context, _ *sitebusv1.SyncResourceRequest) (*sitebusv1.SyncResourceResponse, error) {
		if f.failTeam {
			return nil, fault.Terminal(errors.New("no such project"))
		}
		return &sitebusv1.SyncResourceResponse{}, f.call(ctx, http.MethodGet, "/team")
	})
	contract.Handle(l, contract.SettleOrder, func(ctx context.Context, req *sitebusv1.SettleOrderRequest) (*sitebusv1.SettleOrderResponse, error) {
		f.settled = req
		return &sitebusv1.SettleOrderResponse{}, f.call(ctx, http.MethodPost, "/orders/o1/set_state_done")
	})
}

func TestRunStepsRunsEachStepInOrderWithTheOutputsBeforeIt(t *testing.T) {
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer platform.Close()
	req := &sitebusv1.CreateObjectRequest{OfferingUuid: "0fe1", OrderUuid: "o1", Resource: &sitebusv1.ResourceRef{ResourceUuid: "r1", Slug: "lab"}}
	input, err := contract.NewCreateInput(req, []contract.GroupSpec{{Role: "admin", Name: "ns_lab_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	steps := func(s *ExplainedSaga) (out []string) {
		for _, st := range s.Steps {
			var calls []string
			for _, c := range st.Calls {
				calls = append(calls, c.Method+" "+c.Path)
			}
			line := st.Name + ":"
			if st.Ran {
				line += " ran " + strings.Join(slices.Concat(st.Commands, calls, []string{st.Error}), " | ")
			}
			out = append(out, line)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		failTeam bool
		want     []string
	}{
		{name: "every step runs, its calls under it", want: []string{
			"groups: ran keycloak-sync.ensure-groups | POST /groups/ns_lab_admin | ",
			"object: ran order.create-object | POST /namespaces | ",
			"team: ran membership.sync-resource | GET /team | ",
			"settle: ran order.settle-order | POST /orders/o1/set_state_done | ",
		}},
		{name: "a failing step stops the run, as the saga would compensate", failTeam: true, want: []string{
			"groups: ran keycloak-sync.ensure-groups | POST /groups/ns_lab_admin | ",
			"object: ran order.create-object | POST /namespaces | ",
			"team: ran membership.sync-resource | no such project",
			"settle:",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &dryrun.Recorder{}
			f := &stepServices{platform: &http.Client{Transport: rec.Wrap(nil, "platform")}, url: platform.URL, failTeam: tc.failTeam}
			l := &contract.Local{}
			f.handle(l)
			s := explainSaga(&orderflow.StartedSaga{Definition: contract.NamespaceCreate, ID: "order-o1", Input: input}, contract.Definitions(0))
			if err := runSteps(context.Background(), s, l, rec); err != nil {
				t.Fatal(err)
			}
			if got := steps(s); !slices.Equal(got, tc.want) {
				t.Errorf("steps\n  %q\nwant\n  %q", got, tc.want)
			}
			if !tc.failTeam && (f.settled == nil || f.settled.BackendId != "ns-lab") {
				t.Errorf("settle got %v; want the object step's backend id ns-lab", f.settled)
			}
		})
	}
}
