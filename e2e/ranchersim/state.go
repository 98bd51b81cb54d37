package ranchersim

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"maps"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// project is a Rancher project (management.cattle.io/v3 Project).
type project struct {
	id, clusterID, name, description string
	annotations, labels              map[string]string
	// The quota fields are kept as the client sent them (Rancher's nested
	// objects); the agent does not set them but reads resourceQuota.
	resourceQuota, nsDefaultQuota, containerLimit any
	creatorID                                     string
	uuid                                          string
	created                                       time.Time
}

// binding is a ProjectRoleTemplateBinding.
type binding struct {
	id, name, projectID, roleTemplateID string
	userID, userPrincipalID             string
	groupID, groupPrincipalID           string
	serviceAccount                      string
	annotations, labels                 map[string]string
	creatorID                           string
	uuid                                string
	created                             time.Time
}

// subject is what the binding grants the role to, in the order Rancher's
// webhook resolves it.
func (b *binding) subject() string {
	for _, v := range []string{b.userPrincipalID, b.userID, b.groupPrincipalID, b.groupID, b.serviceAccount} {
		if v != "" {
			return v
		}
	}
	return ""
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
func (s *Server) addProject(p *project, creatorBinding bool) {
	p.clusterID = cmp.Or(p.clusterID, s.opts.ClusterID)
	for p.id == "" || s.projects[p.id] != nil {
		p.id = p.clusterID + ":p-" + randName(5)
	}
	if p.annotations == nil {
		p.annotations = map[string]string{}
	}
	if p.labels == nil {
		p.labels = map[string]string{}
	}
	p.creatorID = cmp.Or(p.creatorID, s.opts.UserID)
	p.annotations["field.cattle.io/creatorId"] = p.creatorID
	p.labels["cattle.io/creator"] = "norman"
	p.uuid = simkit.NewUUID()
	p.created = s.now()
	s.projects[p.id] = p
	if creatorBinding && !s.opts.NoCreatorBinding {
		b := &binding{
			name: "creator-project-owner", projectID: p.id, roleTemplateID: "project-owner",
			userID: p.creatorID, userPrincipalID: "local://" + p.creatorID,
			labels: map[string]string{"authz.management.cattle.io/creator-role-binding": "true"},
		}
		s.storeBinding(b)
	}
}

// storeBinding fills in ids and stores b. Caller holds s.mu.
func (s *Server) storeBinding(b *binding) {
	b.name = cmp.Or(b.name, bindingName(b, s.opts.AllowDuplicateBindings))
	b.id = projectShortID(b.projectID) + ":" + b.name
	for s.opts.AllowDuplicateBindings && s.bindings[b.id] != nil {
		b.name = bindingName(b, true)
		b.id = projectShortID(b.projectID) + ":" + b.name
	}
	if b.annotations == nil {
		b.annotations = map[string]string{}
	}
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	b.creatorID = cmp.Or(b.creatorID, s.opts.UserID)
	b.uuid = simkit.NewUUID()
	b.created = s.now()
	s.bindings[b.id] = b
}

// bindingName is Rancher's PRTB name: since rancher/webhook#1340 derived
// from subject, role and project, so that an identical binding collides
// (409) instead of being created twice; before that random.
func bindingName(b *binding, random bool) string {
	if random {
		return "prtb-" + randName(5)
	}
	sum := sha256.Sum256([]byte(b.subject() + "/" + b.roleTemplateID + "/" + b.projectID))
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	return "prtb-" + strings.ToLower(enc[:10])
}

// nameAlphabet is Kubernetes' generateName alphabet (no vowels, no
// look-alikes), which Rancher's p-… and prtb-… names come from.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randName(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return string(b)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}
