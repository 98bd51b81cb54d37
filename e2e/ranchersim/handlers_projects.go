package ranchersim

import (
	"maps"
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// projectBody is what POST and PUT /v3/projects accept. Pointers tell a
// field left out of a PUT from one set to empty.
type projectBody struct {
	Type                          string            `json:"type"`
	ClusterID                     *string           `json:"clusterId"`
	Name                          *string           `json:"name"`
	Description                   *string           `json:"description"`
	Annotations                   map[string]string `json:"annotations"`
	Labels                        map[string]string `json:"labels"`
	ResourceQuota                 any               `json:"resourceQuota"`
	NamespaceDefaultResourceQuota any               `json:"namespaceDefaultResourceQuota"`
	ContainerDefaultResourceLimit any               `json:"containerDefaultResourceLimit"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) *apiError {
	var in projectBody
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	switch {
	case str(in.ClusterID) == "":
		return missingRequired("clusterId")
	case str(in.Name) == "":
		return missingRequired("name")
	case *in.ClusterID != s.opts.ClusterID:
		return invalidReference("clusterId", "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.UniqueProjectNames {
		for _, p := range s.projects {
			if p.clusterID == *in.ClusterID && p.name == *in.Name {
				return alreadyExists(`project name "` + *in.Name + `" is already in use in cluster ` + p.clusterID)
			}
		}
	}
	p := &project{
		clusterID: *in.ClusterID, name: *in.Name, description: str(in.Description),
		annotations: cloneMap(in.Annotations), labels: cloneMap(in.Labels),
		resourceQuota: in.ResourceQuota, nsDefaultQuota: in.NamespaceDefaultResourceQuota,
		containerLimit: in.ContainerDefaultResourceLimit,
	}
	s.addProject(p, true)
	s.log.Debug("project created", "id", p.id, "name", p.name)
	simkit.WriteJSON(w, http.StatusCreated, projectRep(simkit.BaseURL(r), p))
	return nil
}

// updateProject replaces the fields the body carries, as norman's PUT does;
// the cluster cannot change.
func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) *apiError {
	var in projectBody
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[r.PathValue("id")]
	if p == nil {
		return projectsType.notFound(r.PathValue("id"))
	}
	if in.ClusterID != nil && *in.ClusterID != p.clusterID {
		return newErr(http.StatusUnprocessableEntity, "InvalidFormat", "clusterId cannot be changed")
	}
	if in.Name != nil {
		if *in.Name == "" {
			return newErr(http.StatusUnprocessableEntity, "NotNullable", "name")
		}
		p.name = *in.Name
	}
	if in.Description != nil {
		p.description = *in.Description
	}
	if in.Annotations != nil {
		p.annotations = cloneMap(in.Annotations)
	}
	if in.Labels != nil {
		p.labels = cloneMap(in.Labels)
	}
	if in.ResourceQuota != nil {
		p.resourceQuota = in.ResourceQuota
	}
	if in.NamespaceDefaultResourceQuota != nil {
		p.nsDefaultQuota = in.NamespaceDefaultResourceQuota
	}
	if in.ContainerDefaultResourceLimit != nil {
		p.containerLimit = in.ContainerDefaultResourceLimit
	}
	simkit.WriteJSON(w, http.StatusOK, projectRep(simkit.BaseURL(r), p))
	return nil
}

// deleteProject removes the project and its bindings, then deletes its
// namespaces in Kubernetes, as Rancher's project finalizer does (Rancher
// does it after answering; the simulator before, so a client sees the
// namespaces terminating as soon as the call returns).
func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	s.mu.Lock()
	p := s.projects[id]
	if p == nil {
		s.mu.Unlock()
		return projectsType.notFound(id)
	}
	delete(s.projects, id)
	maps.DeleteFunc(s.bindings, func(_ string, b *binding) bool { return b.projectID == id })
	rep := projectRep(simkit.BaseURL(r), p)
	s.mu.Unlock()
	if s.kube != nil {
		if err := s.kube.deleteProjectNamespaces(r.Context(), id); err != nil {
			s.log.Error("delete project namespaces", "project", id, "err", err)
			return newErr(http.StatusInternalServerError, "ServerError", err.Error())
		}
	}
	rep["state"] = "removing"
	rep["transitioning"] = "yes"
	simkit.WriteJSON(w, http.StatusOK, rep)
	return nil
}

func (s *Server) listProjectBindings(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	b := simkit.BaseURL(r)
	s.mu.Lock()
	if s.projects[id] == nil {
		s.mu.Unlock()
		return projectsType.notFound(id)
	}
	var objs []map[string]any
	for _, pb := range s.bindings {
		if pb.projectID == id {
			objs = append(objs, bindingRep(b, pb))
		}
	}
	s.mu.Unlock()
	writeCollection(w, r, "projectRoleTemplateBinding", b+"/v3/projectRoleTemplateBindings", objs)
	return nil
}
