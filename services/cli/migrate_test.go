package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/services/app"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/quota"
)

// adoptingBackend is a backend whose objects are plans: the adoption
// decisions its PlanAdoption returns by id. Only what migrate calls is
// implemented.
type adoptingBackend struct {
	backend.Backend
	plans    map[string]backend.PlannedAdoption
	adoptErr error
	adopted  []string
}

func (b *adoptingBackend) BackendID(r backend.Resource) (string, error) { return "ns-" + r.Slug, nil }

func (b *adoptingBackend) PlanAdoption(_ context.Context, id string) (backend.PlannedAdoption, error) {
	if p, ok := b.plans[id]; ok {
		return p, nil
	}
	return backend.PlannedAdoption{Action: backend.PlanAbsent}, nil
}

func (b *adoptingBackend) Adopt(_ context.Context, id string) error {
	if b.adoptErr != nil {
		return b.adoptErr
	}
	b.adopted = append(b.adopted, id)
	return nil
}

// resources is an offering's Waldur resources.
type resources []backend.Resource

func (rs resources) ResourcesByBackendID(_ context.Context, id string) ([]backend.Resource, error) {
	var out []backend.Resource
	for _, r := range rs {
		if r.BackendID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

func (rs resources) Resources(context.Context) ([]backend.Resource, error) { return rs, nil }

func TestMigrateAdoptions(t *testing.T) {
	site := resources{
		{UUID: "r1", Name: "alpha", Slug: "alpha", BackendID: "ns-alpha"},
		{UUID: "r2", Name: "beta", Slug: "beta", BackendID: "ns-beta"},
		{UUID: "r3", Name: "gamma", Slug: "gamma"}, // no backend_id: the computed name
		{UUID: "r4", Name: "delta", Slug: "delta", BackendID: "ns-delta"},
	}
	plans := map[string]backend.PlannedAdoption{
		"ns-alpha": {Action: backend.PlanAdopt, Proof: "resource r1 names it"},
		"ns-beta":  {Action: backend.PlanRefuse, Reason: "its spec.owner.orgID is someone else's"},
		"ns-gamma": {Action: backend.PlanManaged},
	}
	cases := []struct {
		name        string
		apply       bool
		adoptErr    error
		wantAdopted []string
		wantErrors  int
	}{
		{name: "without apply nothing is adopted"},
		{name: "apply adopts only the objects to adopt", apply: true, wantAdopted: []string{"ns-alpha"}},
		{name: "an adoption that fails on apply is an error", apply: true, adoptErr: errors.New("conflict"), wantErrors: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &adoptingBackend{plans: plans, adoptErr: tc.adoptErr}
			var r migrateReport
			if err := planAdoptions(context.Background(), b, site, tc.apply, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Adoptions) != 2 || r.Adoptions[0].Object != "ns-alpha" || r.Adoptions[0].Action != backend.PlanAdopt ||
				r.Adoptions[1].Object != "ns-beta" || r.Adoptions[1].Action != backend.PlanRefuse || r.Adoptions[1].Resource != "r2" {
				t.Fatalf("adoptions = %+v, want alpha adopted and beta refused", r.Adoptions)
			}
			if r.Managed != 1 || r.Absent != 1 {
				t.Errorf("managed, absent = %d, %d; want 1, 1", r.Managed, r.Absent)
			}
			if !slices.Equal(b.adopted, tc.wantAdopted) {
				t.Errorf("adopted %v, want %v", b.adopted, tc.wantAdopted)
			}
			if r.Adoptions[0].Adopted != (len(tc.wantAdopted) == 1) {
				t.Errorf("alpha Adopted = %v", r.Adoptions[0].Adopted)
			}
			if len(r.Errors) != tc.wantErrors {
				t.Errorf("errors = %v, want %d", r.Errors, tc.wantErrors)
			}
			if !r.needsPerson() {
				t.Error("a refused object must need a person")
			}
		})
	}
}

func TestMigrateNeedsAPersonOnlyForRefusalsAndErrors(t *testing.T) {
	cases := []struct {
		name string
		r    migrateReport
		want bool
	}{
		{"nothing to adopt", migrateReport{Managed: 3}, false},
		{"only adoptions", migrateReport{Adoptions: []adoptionEntry{{Action: backend.PlanAdopt}}}, false},
		{"a refusal", migrateReport{Adoptions: []adoptionEntry{{Action: backend.PlanAdopt}, {Action: backend.PlanRefuse}}}, true},
		{"an error", migrateReport{Errors: []string{"waldur down"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.needsPerson(); got != tc.want {
				t.Errorf("needsPerson = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMigrateTextNamesTheProofAndTheReason(t *testing.T) {
	var out bytes.Buffer
	printMigrate(&out, []migrateReport{{
		Offering: "k8s (7f3a)", Backend: "k8s-ut-namespace", Managed: 1,
		Adoptions: []adoptionEntry{
			{Object: "ns-alpha", Resource: "r1", ResourceName: "alpha", Action: backend.PlanAdopt, Proof: "resource r1 names it"},
			{Object: "ns-beta", Resource: "r2", Action: backend.PlanRefuse, Reason: "another owner"},
		},
		Quota: []quota.FlagChange{{Resource: "r1", BackendID: "ns-alpha", Action: "pause", From: backend.StatusActive, To: backend.StatusPaused,
			Limits: map[string]float64{"ram": 4, "cpu": 2}}},
		UsageBasis: rancherUsageBasis,
		Membership: []app.MembershipMove{{Resource: "r1", User: "alice", From: "ns_alpha_readonly", To: "ns_alpha_admin"}},
		Groups:     []app.GroupChange{{Resource: "r1", Group: "ns_alpha_readwrite", Action: "create", Members: 1, Reason: "missing"}},
		Cleanup:    []keycloaksync.GroupCleanup{{Realm: "site", Group: "/ns_gone_admin", Action: keycloaksync.CleanupDelete}},
	}}, false)
	for _, want := range []string{
		"offering k8s (7f3a), backend k8s-ut-namespace",
		"would adopt ns-alpha for resource alpha (r1): resource r1 names it",
		"REFUSES ns-beta (resource r2): another owner",
		"1 to adopt, 1 refused, 1 already sitebus's",
		"quota: would pause ns-alpha for resource r1: active -> paused (limits now cpu=2 ram=4)",
		"quota: 1 flag change(s)",
		"usage: sitebus reports the sum of container requests",
		"membership: move alice from ns_alpha_readonly to ns_alpha_admin (resource r1)",
		"group: would create ns_alpha_readwrite with 1 member(s) (resource r1): missing",
		"keycloak: the cleanup would delete group /ns_gone_admin (realm site)",
		"nothing was changed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A part migrate cannot read is an error on the offering's report (text
// and JSON), makes it exit 1, and prints no secret.
func TestMigrateCommandReportsWhatItCannotRead(t *testing.T) {
	path := writeConfig(t,
		"offerings:",
		"  - name: bare",
		"    waldur_api_url: http://127.0.0.1:9/api/",
		"    waldur_api_token: "+secretToken,
		"    waldur_offering_uuid: 7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8",
		"    backend_type: k8s-ut-namespace",
		"    order_processing_backend: k8s-ut-namespace",
		"    backend_settings:",
		"      kubeconfig_path: "+filepath.Join(t.TempDir(), "missing"),
	)
	for _, args := range [][]string{{}, {"--json"}} {
		out, _, err := execute(t, append([]string{"migrate", "-c", path}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "need a person") {
			t.Errorf("migrate %v: err = %v, want exit 1 for a person", args, err)
		}
		if !strings.Contains(out, "kubeconfig_path") || strings.Contains(out, secretToken) {
			t.Errorf("migrate %v output, want the backend error and no token:\n%s", args, out)
		}
	}
}
