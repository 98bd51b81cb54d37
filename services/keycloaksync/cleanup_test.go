package keycloaksync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/keycloak/keycloakfake"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestNSSlug(t *testing.T) {
	tests := map[string]struct {
		name     string
		wantSlug string
		wantOK   bool
	}{
		"admin group":                      {"ns_alpha_admin", "alpha", true},
		"readwrite group":                  {"ns_alpha_readwrite", "alpha", true},
		"readonly group":                   {"ns_alpha_readonly", "alpha", true},
		"slug with dashes and underscores": {"ns_ns-alpha_x_admin", "ns-alpha_x", true},
		"no ns_ prefix":                    {"team_alpha_admin", "", false},
		"unknown role":                     {"ns_alpha_owner", "", false},
		"empty slug":                       {"ns__admin", "", false},
		"role alone":                       {"ns_admin", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			slug, ok := nsSlug(tc.name)
			if slug != tc.wantSlug || ok != tc.wantOK {
				t.Errorf("nsSlug(%q) = %q, %v; want %q, %v", tc.name, slug, ok, tc.wantSlug, tc.wantOK)
			}
		})
	}
}

// owned are the attributes of a group sitebus made for offering.
func owned(offering string) map[string][]string {
	return map[string][]string{"managed_by": {keycloak.ManagedBy}, keycloak.OfferingAttribute: {offering}}
}

// offForeign is an offering of another deployment on the same realm.
const offForeign = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0f0f"

func TestSitebusName(t *testing.T) {
	tests := map[string]struct {
		path string
		want bool
	}{
		"a namespace group":                     {"/ns_alpha_admin", true},
		"a Rancher cluster group":               {"/c_cmsim000", true},
		"a Rancher project group":               {"/c_cmsim000/project_genomics_member", true},
		"a rancher-cluster role group":          {"/c_0a0a/c_0a0a_admin", true},
		"another cluster's role-group name":     {"/c_0a0a/c_0b0b_admin", false},
		"a name sitebus does not give":          {"/team-gone", false},
		"a namespace group under a parent":      {"/c_x/ns_alpha_admin", false},
		"a project group at the top":            {"/project_genomics_member", false},
		"deeper than sitebus ever makes groups": {"/c_x/project_y/z", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sitebusName(tc.path); got != tc.want {
				t.Errorf("sitebusName(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestRemoveLeftovers(t *testing.T) {
	res := func(slug, state string) waldur.Resource {
		return waldur.Resource{UUID: slug + "-uuid", Slug: slug, State: state}
	}
	// The realm "site" before every case; offerings A and B of this
	// config use it, and so does another deployment's offering.
	setup := func(r *keycloakfake.Realm) {
		for _, slug := range []string{"alive", "erred", "creating", "gone", "ended"} {
			r.AddGroupWithAttributes("ns_"+slug+"_admin", "", owned(offA))
		}
		r.AddGroupWithAttributes("ns_gone_readonly", "", owned(offA))
		r.AddGroupWithAttributes("ns_inb_admin", "", owned(offB))
		r.AddGroupWithAttributes("ns_goneb_admin", "", owned(offB))
		r.AddGroupWithAttributes("ns_theirs_admin", "", owned(offForeign))
		r.AddGroup("ns_older_admin", "", keycloak.ManagedBy)
		r.AddGroup("ns_legacy_admin", "", keycloak.LegacyManagedBy)
		r.AddGroup("ns_foreign_admin", "", "")
		r.AddGroup("someones", r.AddGroupWithAttributes("ns_shared_admin", "", owned(offA)), "")
		r.AddGroupWithAttributes("team-gone", "", owned(offA))
	}
	all := []string{"/ns_alive_admin", "/ns_creating_admin", "/ns_ended_admin", "/ns_erred_admin", "/ns_foreign_admin",
		"/ns_gone_admin", "/ns_gone_readonly", "/ns_goneb_admin", "/ns_inb_admin", "/ns_legacy_admin", "/ns_older_admin",
		"/ns_shared_admin", "/ns_shared_admin/someones", "/ns_theirs_admin", "/team-gone"}
	cleaned := []string{"/ns_alive_admin", "/ns_creating_admin", "/ns_erred_admin", "/ns_foreign_admin",
		"/ns_inb_admin", "/ns_legacy_admin", "/ns_older_admin", "/ns_shared_admin", "/ns_shared_admin/someones", "/ns_theirs_admin", "/team-gone"}
	listed := map[string][]waldur.Resource{
		offA: {res("alive", waldur.ResourceStateOK), res("erred", waldur.ResourceStateErred), res("creating", waldur.ResourceStateCreating),
			res("ended", waldur.ResourceStateTerminated), res("older", waldur.ResourceStateOK)},
		offB: {res("inb", waldur.ResourceStateOK)},
	}
	tests := map[string]struct {
		change func(e *env)
		want   []string
		done   float64
	}{
		// Kept: groups of a resource alive in any state but Terminated,
		// in any offering of the realm; another deployment's; those
		// without an offering (the Python agent's, an older sitebus's);
		// foreign ones; a group over a foreign subgroup; a group of ours
		// whose name sitebus does not give.
		"groups of this deployment's gone and terminated resources go, every other stays": {want: cleaned, done: 1},
		"a realm whose offerings Waldur lists nothing for is left alone": {
			change: func(e *env) { e.waldur[offA].resources, e.waldur[offB].resources = nil, nil },
			want:   all,
		},
		"one offering that cannot be listed means no deletion in the realm that pass": {
			change: func(e *env) { e.waldur[offB].err = errors.New("waldur: GET /api/marketplace-provider-resources/: 503") },
			want:   all,
		},
		"a realm is left alone when one of its offerings has no Waldur client": {
			change: func(e *env) { e.s.realms[0].offerings[1].Waldur = nil },
			want:   all,
		},
		"a Keycloak that cannot list its groups is tried at the next period": {
			change: func(e *env) { e.site.SetFail("ManagedGroups", keycloakfake.Error("list groups", 503)) },
			want:   all,
		},
		"a group Keycloak fails to delete is left for the next period, the others go": {
			change: func(e *env) { e.site.FailOnce("DeleteGroup", keycloakfake.Error("delete group", 503)) },
			want:   append([]string{"/ns_goneb_admin"}, cleaned...),
			done:   1,
		},
		"an offering removed from this config loses no group to this deployment": {
			change: func(e *env) { e.s.realms[0].offerings = e.s.realms[0].offerings[:1] },
			want:   append([]string{"/ns_goneb_admin"}, cleaned...),
			done:   1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			setup(e.site)
			e.waldur[offA].resources, e.waldur[offB].resources = listed[offA], listed[offB]
			if tc.change != nil {
				tc.change(e)
			}
			e.s.removeLeftovers(t.Context())
			want := slices.Sorted(slices.Values(tc.want))
			if got := e.site.Paths(); !slices.Equal(got, want) {
				t.Errorf("groups left\n%v\nwant\n%v", got, want)
			}
			if got := testutil.ToFloat64(e.s.metrics.cleanups.WithLabelValues("done")); got != tc.done {
				t.Errorf("passes done %v, want %v", got, tc.done)
			}
		})
	}
}

func TestRemoveLeftoversAdoptsUnownedGroupsOfLiveResources(t *testing.T) {
	tests := map[string]struct {
		managedBy  string
		slug       string // of the live resource of offering A
		wantOwner  string
		wantAdopts float64
	}{
		"an older sitebus's group named by a live resource is adopted": {managedBy: keycloak.ManagedBy, slug: "x", wantOwner: offeringHex(offA), wantAdopts: 1},
		"the Python agent's group named by a live resource is adopted": {managedBy: keycloak.LegacyManagedBy, slug: "x", wantOwner: offeringHex(offA), wantAdopts: 1},
		"a group no live resource names stays as it is, never deleted": {managedBy: keycloak.ManagedBy, slug: "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			id := e.site.AddGroup("ns_x_admin", "", tc.managedBy)
			e.waldur[offA].resources = []waldur.Resource{{UUID: "r1", Slug: tc.slug, State: waldur.ResourceStateOK}}
			e.s.removeLeftovers(t.Context())
			e.s.removeLeftovers(t.Context()) // an adopted group is ours, and named: it stays
			g, _ := e.site.GetGroup(t.Context(), id)
			if g == nil {
				t.Fatal("the group was deleted")
			}
			if g.Offering() != tc.wantOwner {
				t.Errorf("offering %q, want %q", g.Offering(), tc.wantOwner)
			}
			if got := testutil.ToFloat64(e.s.metrics.adopted); got != tc.wantAdopts {
				t.Errorf("adopted %v, want %v", got, tc.wantAdopts)
			}
		})
	}
}

func TestRemoveLeftoversRancher(t *testing.T) {
	const clusterLive, clusterGone = "c_11111111111111111111111111111111", "c_22222222222222222222222222222222"
	// Offering A is a rancher-cluster offering (a cluster group and its
	// role groups per resource), offering B a Rancher project offering on
	// cluster c_cm1 (a child group per Waldur project, bound to projects).
	setup := func(e *env, bound map[string][]string) {
		r := e.site
		live := r.AddGroupWithAttributes(clusterLive, "", owned(offA))
		r.AddGroupWithAttributes(clusterLive+"_admin", live, owned(offA))
		gone := r.AddGroupWithAttributes(clusterGone, "", owned(offA))
		r.AddGroupWithAttributes(clusterGone+"_admin", gone, owned(offA))
		r.AddGroupWithAttributes(clusterGone+"_viewer", gone, owned(offA))
		cm1 := r.AddGroupWithAttributes("c_cm1", "", owned(offB))
		r.AddGroupWithAttributes("project_live_member", cm1, owned(offB))
		r.AddGroupWithAttributes("project_bound_member", cm1, owned(offB))
		r.AddGroupWithAttributes("project_gone_member", cm1, owned(offB))
		r.AddGroupWithAttributes("project_theirs_member", cm1, owned(offForeign))
		cm2 := r.AddGroupWithAttributes("c_cm2", "", owned(offB))
		r.AddGroupWithAttributes("project_gone_member", cm2, owned(offB))
		e.waldur[offA].resources = []waldur.Resource{{UUID: "11111111-1111-1111-1111-111111111111", Slug: "cl", State: waldur.ResourceStateOK},
			{UUID: "22222222-2222-2222-2222-222222222222", Slug: "cl2", State: waldur.ResourceStateTerminated}}
		e.waldur[offB].resources = []waldur.Resource{{UUID: "r1", Slug: "p1", ProjectSlug: "live", State: waldur.ResourceStateOK}}
		offs := e.s.realms[0].offerings
		offs[0].Names = func(r waldur.Resource) []GroupName {
			return []GroupName{{Name: "c_" + strings.ReplaceAll(r.UUID, "-", ""), Subtree: true}}
		}
		offs[1].Names = func(r waldur.Resource) []GroupName {
			return []GroupName{{Name: "c_cm1"}, {Name: "project_" + r.ProjectSlug + "_member", Parent: "c_cm1"}}
		}
		offs[1].Bindings = func(_ context.Context, group string) ([]string, error) {
			if bound == nil {
				return nil, errors.New("rancher: 503")
			}
			return bound[group], nil
		}
	}
	tests := map[string]struct {
		bound map[string][]string // nil: Rancher cannot list bindings
		want  []string
	}{
		"children no live resource names and nothing binds go, then their emptied parents": {
			bound: map[string][]string{"project_bound_member": {"c-m1:p-other"}},
			want: []string{"/" + clusterLive, "/" + clusterLive + "/" + clusterLive + "_admin",
				"/c_cm1", "/c_cm1/project_bound_member", "/c_cm1/project_live_member", "/c_cm1/project_theirs_member"},
		},
		"bindings that cannot be listed keep every child group that would need them": {
			want: []string{"/" + clusterLive, "/" + clusterLive + "/" + clusterLive + "_admin",
				"/c_cm1", "/c_cm1/project_bound_member", "/c_cm1/project_gone_member", "/c_cm1/project_live_member", "/c_cm1/project_theirs_member",
				"/c_cm2", "/c_cm2/project_gone_member"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			setup(e, tc.bound)
			e.s.removeLeftovers(t.Context())
			if got := e.site.Paths(); !slices.Equal(got, tc.want) {
				t.Errorf("groups left\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestRemoveLeftoversDropsPendingAndLeavesOtherRealms(t *testing.T) {
	e := newEnv(t)
	gone := e.site.AddGroupWithAttributes("ns_gone_admin", "", owned(offA))
	e.site.AddGroupWithAttributes("ns_alive_admin", "", owned(offA))
	e.other.AddGroupWithAttributes("ns_gone_admin", "", owned(offOther))
	e.waldur[offA].resources = []waldur.Resource{{UUID: "r1", Slug: "alive", State: waldur.ResourceStateOK}}
	// The other realm's offering lists nothing: that realm is skipped.
	if _, err := e.s.addMember(t.Context(), &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Id: gone}, User: &sitebusv1.UserRef{Ref: "newcomer"}}); err != nil {
		t.Fatal(err)
	}
	e.s.removeLeftovers(t.Context())
	if got := e.site.Paths(); !slices.Equal(got, []string{"/ns_alive_admin"}) {
		t.Errorf("site: %v", got)
	}
	if got := e.other.Paths(); !slices.Equal(got, []string{"/ns_gone_admin"}) {
		t.Errorf("other realm: %v", got)
	}
	if got := e.pendingRefs(t, offA, gone); len(got) != 0 {
		t.Errorf("pending memberships of a removed group kept: %v", got)
	}
}

// TestPlanCleanupIsTheDryRunOfTheCleanup: the plan deletes nothing, and
// the cleanup run after it adopts and deletes exactly what it planned,
// emptied parents after their children included.
func TestPlanCleanupIsTheDryRunOfTheCleanup(t *testing.T) {
	const clusterLive, clusterGone = "c_11111111111111111111111111111111", "c_22222222222222222222222222222222"
	e := newEnv(t)
	r := e.site
	live := r.AddGroupWithAttributes(clusterLive, "", owned(offA))
	r.AddGroupWithAttributes(clusterLive+"_admin", live, owned(offA))
	gone := r.AddGroupWithAttributes(clusterGone, "", owned(offA))
	r.AddGroupWithAttributes(clusterGone+"_admin", gone, owned(offA))
	r.AddGroupWithAttributes(clusterGone+"_viewer", gone, owned(offA))
	held := r.AddGroupWithAttributes("c_held", "", owned(offA))
	r.AddGroup("someones", held, "")
	r.AddGroup("ns_x_admin", "", keycloak.LegacyManagedBy)
	r.AddGroupWithAttributes("ns_theirs_admin", "", owned(offForeign))
	e.waldur[offA].resources = []waldur.Resource{{UUID: "11111111-1111-1111-1111-111111111111", Slug: "cl", State: waldur.ResourceStateOK}}
	e.waldur[offB].resources = []waldur.Resource{{UUID: "r1", Slug: "x", State: waldur.ResourceStateOK}}
	e.s.realms[0].offerings[0].Names = func(r waldur.Resource) []GroupName {
		return []GroupName{{Name: "c_" + strings.ReplaceAll(r.UUID, "-", ""), Subtree: true}}
	}
	before := e.site.Paths()

	// The env's second realm has no resources: skipped, and said so.
	plan, err := e.s.PlanCleanup(t.Context())
	if err == nil || strings.Contains(err.Error(), "realm site") {
		t.Fatalf("PlanCleanup = %v, want only the other realm skipped", err)
	}
	if got := e.site.Paths(); !slices.Equal(got, before) {
		t.Fatalf("planning changed the groups: %v", got)
	}
	var planned, adopted []string
	for _, c := range plan {
		switch c.Action {
		case CleanupDelete:
			planned = append(planned, c.Group)
		case CleanupAdopt:
			adopted = append(adopted, c.Group+"→"+c.Offering)
		}
	}
	slices.Sort(planned)
	wantDeleted := []string{"/" + clusterGone, "/" + clusterGone + "/" + clusterGone + "_admin", "/" + clusterGone + "/" + clusterGone + "_viewer"}
	if !slices.Equal(planned, wantDeleted) {
		t.Errorf("planned deletions %v, want %v", planned, wantDeleted)
	}
	if want := []string{"/ns_x_admin→" + offeringHex(offB)}; !slices.Equal(adopted, want) {
		t.Errorf("planned adoptions %v, want %v", adopted, want)
	}

	e.s.removeLeftovers(t.Context())
	var deleted []string
	after := e.site.Paths()
	for _, p := range before {
		if !slices.Contains(after, p) {
			deleted = append(deleted, p)
		}
	}
	if !slices.Equal(deleted, planned) {
		t.Errorf("the cleanup deleted %v, the plan said %v", deleted, planned)
	}
	if got := testutil.ToFloat64(e.s.metrics.adopted); got != 1 {
		t.Errorf("adopted %v, want 1", got)
	}
}

func TestPlanCleanupSaysWhyARealmIsSkipped(t *testing.T) {
	e := newEnv(t)
	e.site.AddGroupWithAttributes("ns_gone_admin", "", owned(offA))
	if _, err := e.s.PlanCleanup(t.Context()); err == nil || !strings.Contains(err.Error(), "lists no resources") {
		t.Errorf("PlanCleanup = %v, want the skip's reason", err)
	}
}
