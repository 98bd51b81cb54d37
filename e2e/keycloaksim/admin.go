package keycloaksim

import (
	"cmp"
	"fmt"

	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// GroupInfo is a group as tests inspect it.
type GroupInfo struct {
	ID, Name, Path, ParentID string
	Attributes               map[string][]string
}

// inRealm runs f on the realm called name with s.mu held.
func (s *Server) inRealm(name string, f func(rm *realm) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.realms[name]
	if rm == nil {
		return fmt.Errorf("keycloaksim: no realm %q", name)
	}
	return f(rm)
}

// AddUser adds a user to a realm after the fact (a user who signs in to
// Keycloak for the first time) and returns it with its ID.
func (s *Server) AddUser(realmName string, u User) (User, error) {
	err := s.inRealm(realmName, func(rm *realm) error {
		nu, err := rm.addUser(u, s.nowMillis())
		if err == nil {
			u.ID = nu.ID
		}
		return err
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// AddGroup creates a group and its subtree under parentID ("" for top
// level), as someone else would (tests use it for groups sitebus must not
// touch), and returns its ID.
func (s *Server) AddGroup(realmName, parentID string, g Group) (string, error) {
	g.ID = cmp.Or(g.ID, simkit.NewUUID())
	if err := s.inRealm(realmName, func(rm *realm) error { return rm.seedGroup(g, parentID) }); err != nil {
		return "", err
	}
	return g.ID, nil
}

// AddMember puts a user (id or username) into a group behind sitebus's back.
func (s *Server) AddMember(realmName, groupID, userRef string) error {
	return s.setMember(realmName, groupID, userRef, true)
}

// RemoveMember takes a user (id or username) out of a group behind
// sitebus's back, as an administrator in Keycloak's console would.
func (s *Server) RemoveMember(realmName, groupID, userRef string) error {
	return s.setMember(realmName, groupID, userRef, false)
}

func (s *Server) setMember(realmName, groupID, userRef string, in bool) error {
	return s.inRealm(realmName, func(rm *realm) error {
		u, g := rm.userByRef(userRef), rm.groups[groupID]
		if u == nil || g == nil {
			return fmt.Errorf("keycloaksim: no user %q or group %q", userRef, groupID)
		}
		g.members[u.ID] = in
		return nil
	})
}

// Groups returns every group of a realm, ordered by path (nil for an
// unknown realm).
func (s *Server) Groups(realmName string) []GroupInfo {
	var out []GroupInfo
	_ = s.inRealm(realmName, func(rm *realm) error {
		var walk func(parent string)
		walk = func(parent string) {
			for _, g := range rm.children(parent) {
				out = append(out, GroupInfo{ID: g.id, Name: g.name, Path: rm.path(g), ParentID: g.parent, Attributes: cloneAttrs(g.attrs)})
				walk(g.id)
			}
		}
		walk("")
		return nil
	})
	return out
}

// GroupByPath returns the group at path ("/a/b"), if any.
func (s *Server) GroupByPath(realmName, path string) (GroupInfo, bool) {
	for _, g := range s.Groups(realmName) {
		if g.Path == path {
			return g, true
		}
	}
	return GroupInfo{}, false
}

// Members returns a group's direct members, ordered by username, without
// their passwords (nil for an unknown group).
func (s *Server) Members(realmName, groupID string) []User {
	var out []User
	_ = s.inRealm(realmName, func(rm *realm) error {
		if g := rm.groups[groupID]; g != nil {
			for _, u := range rm.groupMembers(g) {
				out = append(out, u.User)
				out[len(out)-1].Password = ""
			}
		}
		return nil
	})
	return out
}

// MemberNames returns a group's members' usernames, ordered; handy for
// comparisons.
func (s *Server) MemberNames(realmName, groupID string) []string {
	return simkit.Map(s.Members(realmName, groupID), func(u User) string { return u.Username })
}

// ExpireTokens makes every access token issued so far invalid, as if its
// lifespan had passed (or Keycloak restarted with new keys).
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// OfferingUsers are the Waldur fixture teams' offering users, once each:
// the usernames sitebus looks up when it adds members to access groups,
// which a local run (cmd/keycloaksim, sitebus-dev) seeds its realm with.
func OfferingUsers(fx *waldursim.Fixture) []User {
	var users []User
	seen := map[string]bool{}
	for _, r := range fx.Resources {
		for _, m := range r.Team {
			if m.OfferingUserUsername != "" && !seen[m.OfferingUserUsername] {
				seen[m.OfferingUserUsername] = true
				users = append(users, User{Username: m.OfferingUserUsername, Email: m.Email})
			}
		}
	}
	return users
}
