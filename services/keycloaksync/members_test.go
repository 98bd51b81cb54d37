package keycloaksync

import (
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/keycloak"
)

func TestMemberChanges(t *testing.T) {
	u := func(ids ...string) []keycloak.User {
		var out []keycloak.User
		for _, id := range ids {
			out = append(out, keycloak.User{ID: id, Username: "user-" + id})
		}
		return out
	}
	ids := func(us []keycloak.User) []string {
		var out []string
		for _, x := range us {
			out = append(out, x.ID)
		}
		return out
	}
	tests := map[string]struct {
		current, wanted []keycloak.User
		add, remove     []string
	}{
		"equal sets change nothing":              {current: u("a", "b"), wanted: u("b", "a")},
		"a new member is added":                  {current: u("a"), wanted: u("a", "b"), add: []string{"b"}},
		"a member not wanted is removed":         {current: u("a", "b"), wanted: u("a"), remove: []string{"b"}},
		"a user wanted twice is added once":      {wanted: u("a", "a"), add: []string{"a"}},
		"an empty wanted list removes everybody": {current: u("a", "b"), remove: []string{"a", "b"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			add, remove := MemberChanges(tc.current, tc.wanted)
			if !slices.Equal(ids(add), tc.add) || !slices.Equal(ids(remove), tc.remove) {
				t.Errorf("add %v remove %v, want add %v remove %v", ids(add), ids(remove), tc.add, tc.remove)
			}
		})
	}
}
