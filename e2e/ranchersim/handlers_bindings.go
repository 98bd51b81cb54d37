package ranchersim

import (
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

type bindingBody struct {
	Type             string            `json:"type"`
	ProjectID        string            `json:"projectId"`
	RoleTemplateID   string            `json:"roleTemplateId"`
	UserID           string            `json:"userId"`
	UserPrincipalID  string            `json:"userPrincipalId"`
	GroupID          string            `json:"groupId"`
	GroupPrincipalID string            `json:"groupPrincipalId"`
	ServiceAccount   string            `json:"serviceAccount"`
	Annotations      map[string]string `json:"annotations"`
	Labels           map[string]string `json:"labels"`
}

// createBinding validates as norman and Rancher's webhook do: required
// fields (422 MissingRequired), existing project and role template (422
// InvalidReference), exactly one kind of subject (422), and, with
// deterministic names, a duplicate is Kubernetes' 409 AlreadyExists.
func (s *Server) createBinding(w http.ResponseWriter, r *http.Request) *apiError {
	var in bindingBody
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	switch {
	case in.ProjectID == "":
		return missingRequired("projectId")
	case in.RoleTemplateID == "":
		return missingRequired("roleTemplateId")
	case !s.roles[in.RoleTemplateID]:
		return invalidReference("roleTemplateId", `roletemplates.management.cattle.io "`+in.RoleTemplateID+`" not found`)
	}
	user := in.UserID != "" || in.UserPrincipalID != ""
	group := in.GroupID != "" || in.GroupPrincipalID != ""
	sa := in.ServiceAccount != ""
	if n := btoi(user) + btoi(group) + btoi(sa); n != 1 {
		return invalidBody("binding must target either a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId] OR a serviceAccount [serviceAccount]")
	}
	pb := &binding{
		projectID: in.ProjectID, roleTemplateID: in.RoleTemplateID,
		userID: in.UserID, userPrincipalID: in.UserPrincipalID,
		groupID: in.GroupID, groupPrincipalID: in.GroupPrincipalID,
		serviceAccount: in.ServiceAccount,
		annotations:    cloneMap(in.Annotations), labels: cloneMap(in.Labels),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[in.ProjectID] == nil {
		return invalidReference("projectId", `projects.management.cattle.io "`+projectShortID(in.ProjectID)+`" not found`)
	}
	if !s.opts.AllowDuplicateBindings {
		pb.name = bindingName(pb, false)
		if s.bindings[projectShortID(pb.projectID)+":"+pb.name] != nil {
			return alreadyExists(`projectroletemplatebindings.management.cattle.io "` + pb.name + `" already exists`)
		}
	}
	s.storeBinding(pb)
	s.log.Debug("binding created", "id", pb.id, "role", pb.roleTemplateID, "subject", pb.subject())
	simkit.WriteJSON(w, http.StatusCreated, bindingRep(simkit.BaseURL(r), pb))
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
