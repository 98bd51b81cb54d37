package keycloaksim

import (
	"cmp"
	"fmt"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// GroupInfo is a group as tests inspect it.
type GroupInfo struct {
	ID, Name, Path, ParentID string
	Attributes               map[string][]string
}

func (s *Server) realm(name string) (*realm, error) {
	rm := s.realms[name]
	if rm == nil {
		return nil, fmt.Errorf("keycloaksim: no realm %q", name)
	}
	return rm, nil
}

// AddRealm creates an empty realm (no-op if it exists).
func (s *Server) AddRealm(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.realms[name] == nil {
		s.realms[name] = newRealm(name)
	}
}

// AddUser adds a user to a realm after the fact (a user who signs in to
// Keycloak for the first time) and returns it with its ID.
func (s *Server) AddUser(realmName string, u User) (User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, err := s.realm(realmName)
	if err != nil {
		return User{}, err
	}
	nu, err := rm.addUser(u, s.nowMillis())
	if err != nil {
		return User{}, err
	}
	u.ID = nu.id
	return u, nil
}

// DeleteUser removes a user (by id or username) and its memberships.
func (s *Server) DeleteUser(realmName, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, err := s.realm(realmName)
	if err != nil {
		return err
	}
	u := rm.userByRef(ref)
	if u == nil {
		return fmt.Errorf("keycloaksim: no user %q", ref)
	}
	rm.deleteUser(u.id)
	return nil
}

// AddGroup creates a group and its subtree under parentID ("" for top
// level), as someone else would (tests use it for groups sitebus must not
// touch), and returns its ID.
func (s *Server) AddGroup(realmName, parentID string, g Group) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, err := s.realm(realmName)
	if err != nil {
		return "", err
	}
	g.ID = cmp.Or(g.ID, simkit.NewUUID())
	if err := rm.seedGroup(g, parentID); err != nil {
		return "", err
	}
	return g.ID, nil
}

// AddMember puts a user (id or username) into a group behind sitebus's back.
func (s *Server) AddMember(realmName, groupID, userRef string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, err := s.realm(realmName)
	if err != nil {
		return err
	}
	u := rm.userByRef(userRef)
	if u == nil || rm.groups[groupID] == nil {
		return fmt.Errorf("keycloaksim: no user %q or group %q", userRef, groupID)
	}
	rm.join(u.id, groupID)
	return nil
}

// Groups returns every group of a realm, ordered by path.
func (s *Server) Groups(realmName string) []GroupInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.realms[realmName]
	if rm == nil {
		return nil
	}
	var out []GroupInfo
	var walk func(parent string)
	walk = func(parent string) {
		for _, g := range rm.children(parent) {
			out = append(out, GroupInfo{ID: g.id, Name: g.name, Path: rm.path(g), ParentID: g.parent, Attributes: cloneAttrs(g.attrs)})
			walk(g.id)
		}
	}
	walk("")
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

// Members returns a group's direct members, ordered by username (nil for
// an unknown group).
func (s *Server) Members(realmName, groupID string) []User {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.realms[realmName]
	if rm == nil || rm.groups[groupID] == nil {
		return nil
	}
	var out []User
	for _, u := range rm.groupMembers(groupID) {
		out = append(out, User{ID: u.id, Username: u.username, Email: u.email,
			FirstName: u.firstName, LastName: u.lastName, Disabled: !u.enabled})
	}
	return out
}

// MemberNames returns a group's members' usernames, ordered; handy for
// comparisons.
func (s *Server) MemberNames(realmName, groupID string) []string {
	var out []string
	for _, u := range s.Members(realmName, groupID) {
		out = append(out, u.Username)
	}
	return out
}

// ExpireTokens makes every access token issued so far invalid, as if its
// lifespan had passed (or Keycloak restarted with new keys); refresh
// tokens stay valid.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// SetTokenLifespan changes the lifespan of tokens issued from now on.
func (s *Server) SetTokenLifespan(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.TokenLifespan = d
}
