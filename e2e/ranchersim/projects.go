package ranchersim

import (
	"cmp"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Project is a Rancher project (management.cattle.io/v3 Project) as
// tests see (and seed) it.
type Project struct {
	ID          string // "c-…:p-…"; empty when seeding: generated
	ClusterID   string // empty when seeding: the simulator's cluster
	Name        string
	Description string
	Annotations map[string]string
	Labels      map[string]string
	CreatorID   string
	Created     time.Time

	// The quota fields are kept as the client sent them (Rancher's nested
	// objects); the agent does not set them but reads resourceQuota.
	resourceQuota, nsDefaultQuota, containerLimit any
	uuid                                          string
}

// Subject is whom a role binding grants its role to: a user or a group,
// each by id or by principal.
type Subject struct {
	UserID           string
	UserPrincipalID  string
	GroupID          string
	GroupPrincipalID string
}

// principal is the subject in the order Rancher's webhook resolves it.
func (sub Subject) principal() string {
	return cmp.Or(sub.UserPrincipalID, sub.UserID, sub.GroupPrincipalID, sub.GroupID)
}

// kinds counts the kinds of subject named (a user, a group).
func (sub Subject) kinds() int {
	return btoi(sub.UserID != "" || sub.UserPrincipalID != "") + btoi(sub.GroupID != "" || sub.GroupPrincipalID != "")
}

// fields adds the subject to a representation; unset ones are null.
func (sub Subject) fields(m map[string]any) map[string]any {
	m["userId"], m["userPrincipalId"] = simkit.OrNil(sub.UserID), simkit.OrNil(sub.UserPrincipalID)
	m["groupId"], m["groupPrincipalId"] = simkit.OrNil(sub.GroupID), simkit.OrNil(sub.GroupPrincipalID)
	return m
}

// Binding is a project role template binding (PRTB) as tests see (and
// seed) it.
type Binding struct {
	ID             string // "p-…:prtb-…"
	Name           string // "prtb-…"
	ProjectID      string
	RoleTemplateID string
	Subject
	ServiceAccount string
	Created        time.Time

	annotations, labels map[string]string
	creatorID, uuid     string
}

// projectShortID is the p-… part of "c-…:p-…".
func projectShortID(id string) string {
	if _, p, ok := strings.Cut(id, ":"); ok {
		return p
	}
	return id
}

// addProject stores p, giving it an id (unless set), uuid and creation time,
// and, unless disabled, Rancher's creator-project-owner binding. Caller
// holds s.mu (or owns s exclusively).
func (s *Server) addProject(p *Project, creatorBinding bool) {
	p.ClusterID = cmp.Or(p.ClusterID, s.opts.ClusterID)
	p.Annotations, p.Labels = simkit.CloneOrEmpty(p.Annotations), simkit.CloneOrEmpty(p.Labels)
	p.CreatorID = cmp.Or(p.CreatorID, s.opts.UserID)
	p.Annotations["field.cattle.io/creatorId"] = p.CreatorID
	p.Labels["cattle.io/creator"] = "norman"
	p.uuid = simkit.NewUUID()
	p.Created = s.now()
	if p.ID == "" || !s.projects.Put(p.ID, p) {
		p.ID = s.projects.Create(func() string { return p.ClusterID + ":p-" + randName(5) }, p)
	}
	if creatorBinding {
		s.storeBinding(&Binding{
			Name: "creator-project-owner", ProjectID: p.ID, RoleTemplateID: "project-owner",
			Subject: Subject{UserID: p.CreatorID, UserPrincipalID: "local://" + p.CreatorID},
			labels:  map[string]string{"authz.management.cattle.io/creator-role-binding": "true"},
		})
	}
}

// storeBinding fills in ids and stores b; false when its name is taken.
// Since rancher/webhook#1340 (Rancher 2.14) a PRTB's name derives from
// subject, role and project, so an identical binding collides (409)
// instead of being created twice. Caller holds s.mu.
func (s *Server) storeBinding(b *Binding) bool {
	b.Name = cmp.Or(b.Name, "prtb-"+derivedName(cmp.Or(b.principal(), b.ServiceAccount)+"/"+b.RoleTemplateID+"/"+b.ProjectID))
	b.annotations, b.labels = simkit.CloneOrEmpty(b.annotations), simkit.CloneOrEmpty(b.labels)
	b.creatorID = cmp.Or(b.creatorID, s.opts.UserID)
	b.uuid = simkit.NewUUID()
	b.Created = s.now()
	b.ID = projectShortID(b.ProjectID) + ":" + b.Name
	return s.bindings.Put(b.ID, b)
}

// derivedName is the hash-derived part of a binding name: the same
// subject, role and scope always give the same name.
func derivedName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])[:10])
}

// randName is n characters of Kubernetes' generateName alphabet (no
// vowels, no look-alikes), as in Rancher's generated ids (p-…, c-m-…).
var randName = utilrand.String

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func projectRep(b string, p *Project) map[string]any {
	self := b + "/v3/projects/" + p.ID
	return normanObj("project", self, p.Created, map[string]any{
		"id": p.ID, "name": p.Name, "description": p.Description, "clusterId": p.ClusterID,
		"namespaceId": nil, "creatorId": p.CreatorID, "uuid": p.uuid,
		"annotations": simkit.CloneOrEmpty(p.Annotations), "labels": simkit.CloneOrEmpty(p.Labels),
		"resourceQuota": p.resourceQuota, "namespaceDefaultResourceQuota": p.nsDefaultQuota,
		"containerDefaultResourceLimit": p.containerLimit,
	}, map[string]string{
		"projectRoleTemplateBindings": self + "/projectroletemplatebindings",
		"cluster":                     b + "/v3/clusters/" + p.ClusterID,
	}, map[string]string{"exportYaml": self + "?action=exportYaml"})
}

func bindingRep(b string, pb *Binding) map[string]any {
	return normanObj("projectRoleTemplateBinding", b+"/v3/projectRoleTemplateBindings/"+pb.ID, pb.Created, pb.fields(map[string]any{
		"id": pb.ID, "name": pb.Name, "projectId": pb.ProjectID, "roleTemplateId": pb.RoleTemplateID,
		"serviceAccount": pb.ServiceAccount, "namespaceId": nil, "creatorId": pb.creatorID, "uuid": pb.uuid,
		"annotations": simkit.CloneOrEmpty(pb.annotations), "labels": simkit.CloneOrEmpty(pb.labels),
	}), map[string]string{
		"project":      b + "/v3/projects/" + pb.ProjectID,
		"roleTemplate": b + "/v3/roleTemplates/" + pb.RoleTemplateID,
	}, nil)
}

// projectBody is what POST and PUT /v3/projects accept (JSON names
// matched case-insensitively). Pointers tell a field left out of a PUT
// from one set to empty.
type projectBody struct {
	ClusterID, Name, Description                                                *string
	Annotations, Labels                                                         map[string]string
	ResourceQuota, NamespaceDefaultResourceQuota, ContainerDefaultResourceLimit any
}

func (s *Server) createProject(r *http.Request, in projectBody) (any, error) {
	switch {
	case in.ClusterID == nil || *in.ClusterID == "":
		return nil, missingRequired("clusterId")
	case in.Name == nil || *in.Name == "":
		return nil, missingRequired("name")
	case *in.ClusterID != s.opts.ClusterID:
		return nil, invalidReference("clusterId", "")
	}
	p := &Project{ClusterID: *in.ClusterID, Name: *in.Name, Description: *cmp.Or(in.Description, new(string)),
		Annotations: in.Annotations, Labels: in.Labels, resourceQuota: in.ResourceQuota,
		nsDefaultQuota: in.NamespaceDefaultResourceQuota, containerLimit: in.ContainerDefaultResourceLimit}
	s.addProject(p, true)
	s.log.Debug("project created", "id", p.ID, "name", p.Name)
	return simkit.Created(projectRep(simkit.BaseURL(r), p)), nil
}

// updateProject replaces the fields the body carries, as norman's PUT does;
// the cluster cannot change.
func updateProject(p *Project, in projectBody) *apiError {
	switch {
	case in.ClusterID != nil && *in.ClusterID != p.ClusterID:
		return newErr(http.StatusUnprocessableEntity, "InvalidFormat", "clusterId cannot be changed")
	case in.Name != nil && *in.Name == "":
		return errNotNull
	}
	p.Name, p.Description = *cmp.Or(in.Name, &p.Name), *cmp.Or(in.Description, &p.Description)
	if in.Annotations != nil {
		p.Annotations = simkit.CloneOrEmpty(in.Annotations)
	}
	if in.Labels != nil {
		p.Labels = simkit.CloneOrEmpty(in.Labels)
	}
	for dst, v := range map[*any]any{&p.resourceQuota: in.ResourceQuota, &p.nsDefaultQuota: in.NamespaceDefaultResourceQuota,
		&p.containerLimit: in.ContainerDefaultResourceLimit} {
		if v != nil {
			*dst = v
		}
	}
	return nil
}

// deleteProject removes the project and its bindings, then deletes its
// namespaces in Kubernetes, as Rancher's project finalizer does (Rancher
// does it after answering; the simulator before, so a client sees the
// namespaces terminating as soon as the call returns).
func (s *Server) deleteProject(r *http.Request, _ struct{}) (any, error) {
	id := r.PathValue("id")
	s.mu.Lock()
	p := s.projects.Delete(id)
	s.bindings.DeleteFunc(func(b *Binding) bool { return b.ProjectID == id })
	s.mu.Unlock()
	if p == nil {
		return nil, projectsType.notFound(id)
	}
	if s.kube != nil {
		if err := s.kube.deleteProjectNamespaces(r.Context(), id); err != nil {
			s.log.Error("delete project namespaces", "project", id, "err", err)
			return nil, newErr(http.StatusInternalServerError, "ServerError", err.Error())
		}
	}
	return removing(projectRep(simkit.BaseURL(r), p), true), nil
}

// bindingBody is what POST /v3/projectroletemplatebindings and
// /v3/clusterroletemplatebindings accept; JSON field names match the Go
// ones case-insensitively (userId, groupPrincipalId, …).
type bindingBody struct {
	ProjectID, ClusterID, RoleTemplateID string
	Subject
	ServiceAccount      string
	Annotations, Labels map[string]string
}

// refusal is the first check a binding to scope (its field: projectId or
// clusterId) fails, in the order norman and Rancher's webhook check:
// required fields (422 MissingRequired), a known role template of roles
// (422 InvalidReference), then the scope's own checks (then).
func (in bindingBody) refusal(field, scope string, roles []string, then ...*apiError) *apiError {
	return cmp.Or(append([]*apiError{
		simkit.Refuse(scope == "", missingRequired(field)),
		simkit.Refuse(in.RoleTemplateID == "", missingRequired("roleTemplateId")),
		simkit.Refuse(!slices.Contains(roles, in.RoleTemplateID),
			invalidReference("roleTemplateId", `roletemplates.management.cattle.io "`+in.RoleTemplateID+`" not found`)),
	}, then...)...)
}

// createBinding validates as norman and Rancher's webhook do: required
// fields, a known role template, exactly one kind of subject (422), an
// existing project (422 InvalidReference), and, with deterministic names,
// a duplicate is Kubernetes' 409 AlreadyExists.
func (s *Server) createBinding(r *http.Request, in bindingBody) (any, error) {
	if e := in.refusal("projectId", in.ProjectID, DefaultRoleTemplates,
		simkit.Refuse(in.kinds()+btoi(in.ServiceAccount != "") != 1, invalidBody("binding must target either a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId] OR a serviceAccount [serviceAccount]")),
		simkit.Refuse(s.projects.Get(in.ProjectID) == nil, invalidReference("projectId", `projects.management.cattle.io "`+projectShortID(in.ProjectID)+`" not found`))); e != nil {
		return nil, e
	}
	pb := &Binding{ProjectID: in.ProjectID, RoleTemplateID: in.RoleTemplateID, Subject: in.Subject,
		ServiceAccount: in.ServiceAccount, annotations: in.Annotations, labels: in.Labels}
	if !s.storeBinding(pb) {
		return nil, alreadyExists(`projectroletemplatebindings.management.cattle.io "` + pb.Name + `" already exists`)
	}
	s.log.Debug("binding created", "id", pb.ID, "role", pb.RoleTemplateID, "subject", cmp.Or(pb.principal(), pb.ServiceAccount))
	return simkit.Created(bindingRep(simkit.BaseURL(r), pb)), nil
}

// Projects returns every project (Rancher's Default and System included),
// ordered by name then id.
func (s *Server) Projects() []Project {
	out := locked(s, func() []Project { return append([]Project{}, s.projects.Copies(nil)...) })
	slices.SortStableFunc(out, func(a, b Project) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// ProjectsNamed returns the projects called name (Rancher allows several).
func (s *Server) ProjectsNamed(name string) []Project {
	return slices.DeleteFunc(s.Projects(), func(p Project) bool { return p.Name != name })
}

// Project returns the project with id, if any.
func (s *Server) Project(id string) (Project, bool) {
	return first(s.Projects(), func(p Project) bool { return p.ID == id })
}

// Bindings returns every binding of projectID ("" for all), ordered by id.
func (s *Server) Bindings(projectID string) []Binding {
	return locked(s, func() []Binding {
		return s.bindings.Copies(func(b *Binding) bool { return projectID == "" || b.ProjectID == projectID })
	})
}

// Imports returns the importYaml calls received, oldest first.
func (s *Server) Imports() []Import {
	return locked(s, func() []Import { return slices.Clone(s.imports) })
}

// locked is f's result, computed under s.mu.
func locked[T any](s *Server, f func() T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f()
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
	if p.ID != "" && s.projects.Get(p.ID) != nil {
		return Project{}, fmt.Errorf("ranchersim: project %s exists", p.ID)
	}
	s.addProject(&p, false) // a copy; its maps are cloned
	return p, nil
}
