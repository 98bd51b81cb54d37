package keycloak

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/Nerzal/gocloak/v13"
)

// User is a Keycloak user.
type User struct {
	ID, Username, Email, FirstName, LastName string
	Enabled                                  bool
}

func userOf(u *gocloak.User) User {
	return User{
		ID: gocloak.PString(u.ID), Username: gocloak.PString(u.Username), Email: gocloak.PString(u.Email),
		FirstName: gocloak.PString(u.FirstName), LastName: gocloak.PString(u.LastName), Enabled: gocloak.PBool(u.Enabled),
	}
}

// FindUser looks a user up by id (byID, keycloak_use_user_id) or by exact
// username; nil, nil when there is none. A lookup by id that finds nothing
// tries the string as a username, as the Python agent does, so sites whose
// Waldur usernames are Keycloak usernames keep working either way.
func (c *Client) FindUser(ctx context.Context, idOrUsername string, byID bool) (*User, error) {
	if idOrUsername == "" {
		return nil, fmt.Errorf("keycloak: find user: %w: empty id or username", ErrInvalid)
	}
	if byID {
		var u *gocloak.User
		err := c.do(ctx, "get user "+idOrUsername, func(ctx context.Context, tok string) error {
			var err error
			u, err = c.gc.GetUserByID(ctx, tok, c.cfg.Realm, esc(idOrUsername))
			return err
		})
		if err == nil {
			found := userOf(u)
			return &found, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	var us []*gocloak.User
	err := c.do(ctx, "find user "+idOrUsername, func(ctx context.Context, tok string) error {
		var err error
		us, err = c.gc.GetUsers(ctx, tok, c.cfg.Realm, gocloak.GetUsersParams{
			Username: gocloak.StringP(idOrUsername), Exact: gocloak.BoolP(true), BriefRepresentation: gocloak.BoolP(true),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, u := range us {
		if strings.EqualFold(gocloak.PString(u.Username), idOrUsername) {
			found := userOf(u)
			return &found, nil
		}
	}
	return nil, nil
}

// AddMember puts a user into a group; being a member already is fine. A
// missing user or group is ErrNotFound (a user not in Keycloak yet: keep
// the membership pending and try later).
func (c *Client) AddMember(ctx context.Context, groupID, userID string) error {
	err := c.do(ctx, fmt.Sprintf("add user %s to group %s", userID, groupID), func(ctx context.Context, tok string) error {
		return c.gc.AddUserToGroup(ctx, tok, c.cfg.Realm, esc(userID), esc(groupID))
	})
	if err == nil {
		c.log.Info("keycloak member added", "group_id", groupID, "user_id", userID)
	}
	return err
}

// RemoveMember takes a user out of a group; not being a member, or the
// user or group being gone, is fine: the user is not in the group. It does
// not check that the group is managed: callers decide that from Group.
func (c *Client) RemoveMember(ctx context.Context, groupID, userID string) error {
	err := c.do(ctx, fmt.Sprintf("remove user %s from group %s", userID, groupID), func(ctx context.Context, tok string) error {
		return c.gc.DeleteUserFromGroup(ctx, tok, c.cfg.Realm, esc(userID), esc(groupID))
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err == nil {
		c.log.Info("keycloak member removed", "group_id", groupID, "user_id", userID)
	}
	return err
}

// Members returns a group's direct members, all pages of them.
func (c *Client) Members(ctx context.Context, groupID string) ([]User, error) {
	var out []User
	for first := 0; ; first += pageSize {
		var page []*gocloak.User
		err := c.do(ctx, "list members of group "+groupID, func(ctx context.Context, tok string) error {
			var err error
			page, err = c.gc.GetGroupMembers(ctx, tok, c.cfg.Realm, esc(groupID), gocloak.GetGroupsParams{
				First: gocloak.IntP(first), Max: gocloak.IntP(pageSize), BriefRepresentation: gocloak.BoolP(true),
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, u := range page {
			out = append(out, userOf(u))
		}
		if len(page) < pageSize {
			return out, nil
		}
	}
}

// UserGroups returns the groups a user is a direct member of, with their
// attributes (to tell managed groups apart) and parents.
func (c *Client) UserGroups(ctx context.Context, userID string) ([]Group, error) {
	var out []Group
	for first := 0; ; first += pageSize {
		var page []groupJSON
		err := c.do(ctx, "list groups of user "+userID, func(ctx context.Context, tok string) error {
			page = nil
			q := map[string]string{"first": strconv.Itoa(first), "max": strconv.Itoa(pageSize), "briefRepresentation": "false"}
			return c.get(ctx, tok, c.adminURL("users", userID, "groups"), q, &page)
		})
		if err != nil {
			return nil, err
		}
		for _, g := range page {
			out = append(out, g.group())
		}
		if len(page) < pageSize {
			return out, nil
		}
	}
}
