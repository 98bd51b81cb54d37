package membership

import (
	"testing"

	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestDesired(t *testing.T) {
	team := []waldur.ProjectUser{
		{Username: "alice", OfferingUserUsername: "alice01", Role: "PROJECT.ADMIN", Email: "a@x"},
		{Username: "bob", OfferingUserUsername: "bob01", Role: "PROJECT.MEMBER"},
		{Username: "carol", OfferingUserUsername: "carol01", Role: "PROJECT.GUEST"},
		{Username: "dave", OfferingUserUsername: "", Role: "PROJECT.ADMIN"},
		{Username: "erin", OfferingUserUsername: "erin01", Role: "member"},
		{Username: "erin", OfferingUserUsername: "erin01", Role: "PROJECT.MANAGER"},
	}
	tests := map[string]struct {
		mapping  map[string]string
		restrict bool
		want     map[string]string
	}{
		"Waldur's PROJECT.* names map like the plugin's short names": {
			want: map[string]string{"alice01": "admin", "bob01": "readwrite", "carol01": "readonly", "erin01": "admin"},
		},
		"a configured mapping overrides the defaults": {
			mapping: map[string]string{"PROJECT.MEMBER": "readonly", "PROJECT.GUEST": "readwrite"},
			want:    map[string]string{"alice01": "admin", "bob01": "readonly", "carol01": "readwrite", "erin01": "admin"},
		},
		"restricted member access leaves nobody": {restrict: true, want: map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Desired(team, tc.mapping, "readonly", tc.restrict)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for ref, role := range tc.want {
				if got[ref].Role != role {
					t.Errorf("%s: role %q, want %q", ref, got[ref].Role, role)
				}
			}
		})
	}
	// Backends with their own role map (OKD) get the role as Waldur sent it.
	if m := Desired(team, nil, "readonly", false); m["alice01"].WaldurRole != "PROJECT.ADMIN" || m["erin01"].WaldurRole != "PROJECT.MANAGER" {
		t.Errorf("Waldur roles not kept: %+v", m)
	}
	if byRole := ByRole(Desired(team, nil, "readonly", false)); len(byRole["admin"]) != 2 || len(byRole["readonly"]) != 1 {
		t.Errorf("ByRole = %v", byRole)
	}
}

func TestDesiredInOwnRoles(t *testing.T) {
	roles := []string{"cluster-owner", "cluster-member"}
	team := []waldur.ProjectUser{
		{OfferingUserUsername: "alice01", Role: "PROJECT.ADMIN"},
		{OfferingUserUsername: "bob01", Role: "PROJECT.MEMBER"},
		{OfferingUserUsername: "bob01", Role: "PROJECT.MANAGER"},
		{OfferingUserUsername: "carol01", Role: "PROJECT.GUEST"},
		{OfferingUserUsername: "dave01", Role: "manager"},
		{OfferingUserUsername: "erin01", Role: "PROJECT.MEMBER"},
	}
	tests := map[string]struct {
		mapping map[string]string
		want    map[string]string
	}{
		"the mapping is the whole mapping: the plugin's names and unnamed roles give nothing": {
			mapping: map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"},
			want:    map[string]string{"alice01": "cluster-owner", "bob01": "cluster-owner", "erin01": "cluster-member"},
		},
		"an empty role excludes, and a user's other role still counts": {
			mapping: map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "", "PROJECT.MEMBER": "cluster-member"},
			want:    map[string]string{"alice01": "cluster-owner", "bob01": "cluster-member", "erin01": "cluster-member"},
		},
		"the first of the roles wins for a user listed twice, in either order": {
			mapping: map[string]string{"PROJECT.MEMBER": "cluster-owner", "PROJECT.MANAGER": "cluster-member"},
			want:    map[string]string{"bob01": "cluster-owner", "erin01": "cluster-owner"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := DesiredIn(team, tc.mapping, roles, false)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for ref, role := range tc.want {
				if got[ref].Role != role {
					t.Errorf("%s: role %q, want %q", ref, got[ref].Role, role)
				}
			}
		})
	}
}
