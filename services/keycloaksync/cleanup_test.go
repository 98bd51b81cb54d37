package keycloaksync

import (
	"errors"
	"slices"
	"testing"

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

func TestRemoveLeftovers(t *testing.T) {
	res := func(slug, state string) waldur.Resource {
		return waldur.Resource{UUID: slug + "-uuid", Slug: slug, State: state}
	}
	// The realm "site" before every case; offerings A and B use it.
	setup := func(r *keycloakfake.Realm) {
		for _, slug := range []string{"alive", "erred", "creating", "inb", "gone", "ended"} {
			r.AddGroup("ns_"+slug+"_admin", "", keycloak.ManagedBy)
		}
		r.AddGroup("ns_gone_readonly", "", keycloak.ManagedBy)
		r.AddGroup("ns_legacy_admin", "", keycloak.LegacyManagedBy)
		r.AddGroup("ns_foreign_admin", "", "")
		r.AddGroup("project_gone_member", r.AddGroup("c_cm1", "", keycloak.ManagedBy), keycloak.ManagedBy)
		r.AddGroup("someones", r.AddGroup("ns_shared_admin", "", keycloak.ManagedBy), "")
	}
	all := []string{"/c_cm1", "/c_cm1/project_gone_member", "/ns_alive_admin", "/ns_creating_admin", "/ns_ended_admin", "/ns_erred_admin",
		"/ns_foreign_admin", "/ns_gone_admin", "/ns_gone_readonly", "/ns_inb_admin", "/ns_legacy_admin", "/ns_shared_admin", "/ns_shared_admin/someones"}
	cleaned := []string{"/c_cm1", "/c_cm1/project_gone_member", "/ns_alive_admin", "/ns_creating_admin", "/ns_erred_admin",
		"/ns_foreign_admin", "/ns_inb_admin", "/ns_legacy_admin", "/ns_shared_admin", "/ns_shared_admin/someones"}
	listed := map[string][]waldur.Resource{
		offA: {res("alive", waldur.ResourceStateOK), res("erred", waldur.ResourceStateErred), res("creating", waldur.ResourceStateCreating),
			res("ended", waldur.ResourceStateTerminated)},
		offB: {res("inb", waldur.ResourceStateOK)},
	}
	tests := map[string]struct {
		change func(e *env)
		want   []string
	}{
		// Kept: groups of a resource alive in any state but Terminated,
		// in any offering of the realm; the Python agent's; foreign ones;
		// names that are not a ManagedNamespace's (Rancher's); a group
		// over a foreign subgroup (Keycloak would delete it with it).
		"groups of gone and terminated resources go, every other stays": {want: cleaned},
		"a realm whose offerings Waldur lists nothing for is left alone": {
			change: func(e *env) { e.waldur[offA].resources, e.waldur[offB].resources = nil, nil },
			want:   all,
		},
		"a realm is left alone when one of its offerings cannot be listed": {
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
			want:   append([]string{"/ns_ended_admin"}, cleaned...),
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
		})
	}
}

func TestRemoveLeftoversDropsPendingAndLeavesOtherRealms(t *testing.T) {
	e := newEnv(t)
	gone := e.site.AddGroup("ns_gone_admin", "", keycloak.ManagedBy)
	e.site.AddGroup("ns_alive_admin", "", keycloak.ManagedBy)
	e.other.AddGroup("ns_gone_admin", "", keycloak.ManagedBy)
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
