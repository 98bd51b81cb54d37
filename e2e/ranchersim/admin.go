package ranchersim

import (
	"fmt"
	"maps"
	"sort"
	"time"
)

// Project is a project as tests see (and seed) it.
type Project struct {
	ID          string // "c-…:p-…"; empty when seeding: generated
	ClusterID   string // empty when seeding: the simulator's cluster
	Name        string
	Description string
	Annotations map[string]string
	Labels      map[string]string
	CreatorID   string
	Created     time.Time
}

// Binding is a project role template binding as tests see (and seed) it.
type Binding struct {
	ID               string // "p-…:prtb-…"
	Name             string // "prtb-…"
	ProjectID        string
	RoleTemplateID   string
	UserID           string
	UserPrincipalID  string
	GroupID          string
	GroupPrincipalID string
	ServiceAccount   string
	Created          time.Time
}

func toProject(p *project) Project {
	return Project{ID: p.id, ClusterID: p.clusterID, Name: p.name, Description: p.description,
		Annotations: cloneMap(p.annotations), Labels: cloneMap(p.labels), CreatorID: p.creatorID, Created: p.created}
}

func toBinding(b *binding) Binding {
	return Binding{ID: b.id, Name: b.name, ProjectID: b.projectID, RoleTemplateID: b.roleTemplateID,
		UserID: b.userID, UserPrincipalID: b.userPrincipalID, GroupID: b.groupID,
		GroupPrincipalID: b.groupPrincipalID, ServiceAccount: b.serviceAccount, Created: b.created}
}

// Projects returns every project (Rancher's Default and System included
// unless Options.NoDefaultProjects), ordered by name then id.
func (s *Server) Projects() []Project {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Project, 0, len(s.projects))
	for _, p := range s.projects {
		out = append(out, toProject(p))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// ProjectsNamed returns the projects called name (Rancher allows several).
func (s *Server) ProjectsNamed(name string) []Project {
	var out []Project
	for _, p := range s.Projects() {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// Project returns the project with id, if any.
func (s *Server) Project(id string) (Project, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[id]
	if p == nil {
		return Project{}, false
	}
	return toProject(p), true
}

// Bindings returns every binding of projectID ("" for all), ordered by id.
func (s *Server) Bindings(projectID string) []Binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Binding
	for _, b := range s.bindings {
		if projectID == "" || b.projectID == projectID {
			out = append(out, toBinding(b))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Imports returns the importYaml calls received, oldest first.
func (s *Server) Imports() []Import {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Import(nil), s.imports...)
}

// AddProject creates a project behind the client's back (someone clicking
// in the Rancher UI) and returns it with its ID. No creator binding is
// added.
func (s *Server) AddProject(p Project) (Project, error) {
	if p.Name == "" {
		return Project{}, fmt.Errorf("ranchersim: a project needs a name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.ID != "" && s.projects[p.ID] != nil {
		return Project{}, fmt.Errorf("ranchersim: project %s exists", p.ID)
	}
	np := &project{id: p.ID, clusterID: p.ClusterID, name: p.Name, description: p.Description,
		annotations: cloneMap(p.Annotations), labels: cloneMap(p.Labels), creatorID: p.CreatorID}
	s.addProject(np, false)
	return toProject(np), nil
}

// AddBinding creates a binding behind the client's back and returns it with
// its ID. The project must exist; duplicates follow the options, as over
// the API.
func (s *Server) AddBinding(b Binding) (Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[b.ProjectID] == nil {
		return Binding{}, fmt.Errorf("ranchersim: no project %q", b.ProjectID)
	}
	nb := &binding{name: b.Name, projectID: b.ProjectID, roleTemplateID: b.RoleTemplateID,
		userID: b.UserID, userPrincipalID: b.UserPrincipalID, groupID: b.GroupID,
		groupPrincipalID: b.GroupPrincipalID, serviceAccount: b.ServiceAccount}
	if nb.name == "" && !s.opts.AllowDuplicateBindings {
		nb.name = bindingName(nb, false)
	}
	if nb.name != "" && s.bindings[projectShortID(nb.projectID)+":"+nb.name] != nil {
		return Binding{}, fmt.Errorf("ranchersim: binding %s exists", nb.name)
	}
	s.storeBinding(nb)
	return toBinding(nb), nil
}

// DeleteProject removes a project and its bindings behind the client's
// back; unlike the API it leaves the namespaces alone.
func (s *Server) DeleteProject(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[id] == nil {
		return false
	}
	delete(s.projects, id)
	maps.DeleteFunc(s.bindings, func(_ string, b *binding) bool { return b.projectID == id })
	return true
}
