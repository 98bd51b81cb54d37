package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

// candidate is an object found by name: its index in the list and the
// description that may carry the mark.
type candidate struct {
	i           int
	description string
}

// pickOwned chooses among the objects a name lookup found: the first of
// owner's (a later one is a duplicate a past race made, left alone), -1
// when none was found, or a terminal error when all are someone else's.
func (c *Client) pickOwned(ctx context.Context, owner Owner, op, obj string, found []candidate) (int, error) {
	if len(found) == 0 {
		return -1, nil
	}
	for n, f := range found {
		if owner.Marks(f.description) {
			if n > 0 || len(found) > 1 {
				c.log.WarnContext(ctx, "several objects of one name; using the first of the owner's", "object", obj, "found", len(found))
			}
			return f.i, nil
		}
	}
	return -1, notManaged(op, obj, c.projectID, owner)
}

// gone reports whether err is a 404: the object is absent, so a delete is
// done.
func gone(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// deleteOwned reads an object (absent: done), checks it is owner's, and
// deletes it (a 404 then is done too).
func (c *Client) deleteOwned(ctx context.Context, owner Owner, kind, id string,
	read func() (name, description, projectID string, err error), del func() error) error {
	obj := kind + " " + id
	name, desc, project, err := read()
	if gone(err) {
		return nil
	}
	if err != nil {
		return classify("read", obj, err)
	}
	if name != "" {
		obj = fmt.Sprintf("%s %s (%s)", kind, name, id)
	}
	if !owner.Marks(desc) {
		return notManaged("delete", obj, project, owner)
	}
	if err := del(); err != nil && !gone(err) {
		return classify("delete", obj, err)
	}
	c.log.InfoContext(ctx, "deleted "+kind, "name", name, "id", id, "owner", string(owner))
	return nil
}
