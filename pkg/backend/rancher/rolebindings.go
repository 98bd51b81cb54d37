package rancher

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// RoleBinding is a Rancher role template binding of a project
// (projectroletemplatebinding) or a cluster (clusterroletemplatebinding),
// with the fields member sync reads: the role and one subject, a user
// (by principal, or by Rancher user id) or a group principal.
type RoleBinding struct {
	ID               string            `json:"id,omitempty"`
	RoleTemplateID   string            `json:"roleTemplateId"`
	UserID           string            `json:"userId,omitempty"`
	UserPrincipalID  string            `json:"userPrincipalId,omitempty"`
	GroupPrincipalID string            `json:"groupPrincipalId,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
}

// IsUser reports whether the binding's subject is a user.
func (b RoleBinding) IsUser() bool { return b.UserPrincipalID != "" || b.UserID != "" }

// SameSubject reports whether b and o bind the same user or group:
// Rancher fills userId and userPrincipalId both for a user, so either
// matching is the same user.
func (b RoleBinding) SameSubject(o RoleBinding) bool {
	switch {
	case b.GroupPrincipalID != "" || o.GroupPrincipalID != "":
		return b.GroupPrincipalID == o.GroupPrincipalID
	case b.UserPrincipalID != "" && b.UserPrincipalID == o.UserPrincipalID:
		return true
	default:
		return b.UserID != "" && b.UserID == o.UserID
	}
}

// Subject names the binding's subject for logs and messages.
func (b RoleBinding) Subject() string {
	switch {
	case b.GroupPrincipalID != "":
		return b.GroupPrincipalID
	case b.UserPrincipalID != "":
		return b.UserPrincipalID
	}
	return b.UserID
}

// OwnedBy reports whether sitebus made the binding for the Waldur
// resource: the marks it puts on everything it creates.
func (b RoleBinding) OwnedBy(resourceUUID string) bool {
	return b.Annotations[AnnotationManaged] == "true" && b.Annotations[AnnotationResourceUUID] == resourceUUID
}

type roleBindingJSON struct {
	RoleBinding
	ClusterID string `json:"clusterId,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
}

// ProjectRoleBindings lists the role template bindings of the Rancher
// project (<cluster id>:<project id>), users and groups alike; service
// account bindings are left out, as they name no one who logs in.
func (c *ClusterClient) ProjectRoleBindings(ctx context.Context, projectID string) ([]RoleBinding, error) {
	all, err := list[roleBindingJSON](ctx, c.api, "/v3/projectroletemplatebindings", url.Values{"projectId": {projectID}}.Encode())
	if err != nil {
		return nil, err
	}
	var out []RoleBinding
	for _, b := range all {
		if b.ProjectID == projectID && (b.IsUser() || b.GroupPrincipalID != "") {
			out = append(out, b.RoleBinding)
		}
	}
	return out, nil
}

// ClusterRoleBindings lists the role template bindings of the cluster
// sitebus made for ref, whoever made them (Rancher's creator binding and
// anyone's by hand included).
func (c *ClusterClient) ClusterRoleBindings(ctx context.Context, ref ClusterRef) ([]RoleBinding, error) {
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return nil, err
	}
	all, err := list[roleBindingJSON](ctx, c.api, "/v3/clusterroletemplatebindings", url.Values{"clusterId": {id}}.Encode())
	if err != nil {
		return nil, err
	}
	var out []RoleBinding
	for _, b := range all {
		if b.ClusterID == id {
			out = append(out, b.RoleBinding)
		}
	}
	return out, nil
}

// CreateClusterRoleBinding binds b's subject to the cluster sitebus made
// for ref with b's role, marked as sitebus's for ref's resource (so that
// only such bindings are ever removed). A 409 (the same binding exists,
// made by someone else or meanwhile) counts as bound: created is false.
func (c *ClusterClient) CreateClusterRoleBinding(ctx context.Context, ref ClusterRef, b RoleBinding) (created bool, err error) {
	if !roleRe.MatchString(b.RoleTemplateID) {
		return false, fault.Errorf(fault.Invalid, "%q is not a Rancher role template id", b.RoleTemplateID)
	}
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return false, err
	}
	body := map[string]any{"type": "clusterRoleTemplateBinding", "clusterId": id, "roleTemplateId": b.RoleTemplateID,
		"annotations": ownership(ref.ResourceUUID)}
	switch {
	case b.GroupPrincipalID != "":
		body["groupPrincipalId"] = b.GroupPrincipalID
	case b.UserPrincipalID != "":
		body["userPrincipalId"] = b.UserPrincipalID
	case b.UserID != "":
		body["userId"] = b.UserID
	default:
		return false, fault.Errorf(fault.Invalid, "a cluster role binding needs a user or a group")
	}
	var made roleBindingJSON
	err = c.api.do(ctx, http.MethodPost, "/v3/clusterroletemplatebindings", "", body, &made)
	if errors.Is(err, ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.log.Info("bound to Rancher cluster", "cluster", id, "subject", b.Subject(), "role", b.RoleTemplateID, "binding", made.ID)
	return true, nil
}

// DeleteClusterRoleBinding deletes the binding of the cluster sitebus made
// for ref when it carries sitebus's marks for ref's resource; any other
// binding is refused (backend.ErrNotManaged), one already gone is done.
func (c *ClusterClient) DeleteClusterRoleBinding(ctx context.Context, ref ClusterRef, bindingID string) error {
	id, err := c.ownedV3(ctx, ref)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	path := "/v3/clusterroletemplatebindings/" + url.PathEscape(bindingID)
	var b roleBindingJSON
	if err := c.api.do(ctx, http.MethodGet, path, "", nil, &b); errors.Is(err, backend.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if b.ClusterID != id || !b.OwnedBy(ref.ResourceUUID) {
		return fault.Errorf(fault.NotManaged, "Rancher cluster role binding %s is not sitebus's for %s; refusing to delete it", bindingID, ref)
	}
	if err := c.api.do(ctx, http.MethodDelete, path, "", nil, nil); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	c.log.Info("unbound from Rancher cluster", "cluster", id, "subject", b.Subject(), "role", b.RoleTemplateID, "binding", bindingID)
	return nil
}
