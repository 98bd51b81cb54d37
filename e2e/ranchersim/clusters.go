package ranchersim

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// mgmtCluster is the management (v3) cluster of a provisioning cluster.
type mgmtCluster struct {
	id, name string
	provID   string // "fleet-default/<name>" of its v1 object
	created  time.Time
	// kubeconfigs counts generateKubeconfig calls (each makes a token).
	kubeconfigs int
}

// regToken is a ClusterRegistrationToken.
type regToken struct {
	id, name, clusterID, token, uuid string
	created                          time.Time
}

// clusterBinding is a ClusterRoleTemplateBinding.
type clusterBinding struct {
	id, name, clusterID, roleTemplateID string
	userID, userPrincipalID             string
	groupID, groupPrincipalID           string
	creatorID, uuid                     string
	created                             time.Time
}

func (b *clusterBinding) subject() string {
	for _, v := range []string{b.userPrincipalID, b.userID, b.groupPrincipalID, b.groupID} {
		if v != "" {
			return v
		}
	}
	return ""
}

// knownCluster reports whether id is the simulator's own cluster or a
// provisioned one. Caller holds s.mu.
func (s *Server) knownCluster(id string) bool {
	return id == s.opts.ClusterID || s.prov.clusters[id] != nil
}

func notFoundCluster(id string) *apiError {
	return notFound(`clusters.management.cattle.io "` + id + `" not found`)
}

// clusterState is a provisioned cluster's state and message: active once
// it has an etcd, a control plane and a worker node and every node is
// active, as Rancher's message says. read counts as a poll of its nodes.
// Caller holds s.mu.
func (s *Server) clusterState(mc *mgmtCluster, read bool) (state, message string) {
	var etcd, cp, worker, all, activeNodes int
	for _, id := range s.sortedNodeIDs() {
		n := s.prov.nodes[id]
		if n.clusterID != mc.id {
			continue
		}
		if read {
			s.observeNode(n)
		}
		all++
		if st := s.nodeState(n); st != "registering" && st != "error" {
			activeNodes++
		}
		etcd += btoi(n.etcd)
		cp += btoi(n.controlPlane)
		worker += btoi(n.worker)
	}
	switch {
	case etcd == 0 || cp == 0 || worker == 0:
		return "provisioning", "waiting for at least one control plane, etcd, and worker node to be registered"
	case activeNodes < all:
		return "provisioning", fmt.Sprintf("waiting for %d of %d nodes to become active", all-activeNodes, all)
	}
	return "active", ""
}

// mgmtClusterRep is a provisioned cluster's v3 object. Caller holds s.mu.
func (s *Server) mgmtClusterRep(b string, mc *mgmtCluster, read bool) map[string]any {
	self := b + "/v3/clusters/" + mc.id
	state, msg := s.clusterState(mc, read)
	nodes := 0
	for _, n := range s.prov.nodes {
		nodes += btoi(n.clusterID == mc.id)
	}
	m := map[string]any{
		"id": mc.id, "type": "cluster", "baseType": "cluster",
		"name": mc.name, "description": "", "uuid": "",
		"internal": false, "driver": "rke2", "provider": "rke2", "fleetWorkspaceName": FleetNamespace,
		"nodeCount":   nodes,
		"annotations": map[string]string{}, "labels": map[string]string{"provider.cattle.io": "rke2"},
		"links": map[string]string{
			"self": self, "update": self, "remove": self,
			"nodes":                       self + "/nodes",
			"clusterRegistrationTokens":   self + "/clusterregistrationtokens",
			"clusterRoleTemplateBindings": self + "/clusterroletemplatebindings",
			"projects":                    b + "/v3/projects?clusterId=" + url.QueryEscape(mc.id),
		},
		"actions": map[string]string{"generateKubeconfig": self + "?action=generateKubeconfig"},
	}
	timestamps(m, mc.created)
	m["state"] = state
	m["transitioning"] = map[bool]string{true: "yes", false: "no"}[state != "active"]
	m["transitioningMessage"] = msg
	return m
}

func (s *Server) listAllClusters(w http.ResponseWriter, r *http.Request) *apiError {
	b := simkit.BaseURL(r)
	s.mu.Lock()
	objs := []map[string]any{s.clusterRep(b)}
	for _, mc := range s.prov.clusters {
		objs = append(objs, s.mgmtClusterRep(b, mc, true))
	}
	s.mu.Unlock()
	writeCollection(w, r, "cluster", b+"/v3/clusters", objs)
	return nil
}

func (s *Server) getAnyCluster(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("cluster")
	if id == s.opts.ClusterID {
		return s.getCluster(w, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mc := s.prov.clusters[id]
	if mc == nil {
		return notFoundCluster(id)
	}
	simkit.WriteJSON(w, http.StatusOK, s.mgmtClusterRep(simkit.BaseURL(r), mc, true))
	return nil
}

// anyClusterAction serves POST /v3/clusters/<id>?action=…: importYaml on
// the simulator's own cluster (routes.go), generateKubeconfig on any.
func (s *Server) anyClusterAction(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("cluster")
	if paramValue(r, "action") != "generateKubeconfig" {
		if id != s.opts.ClusterID {
			s.mu.Lock()
			known := s.knownCluster(id)
			s.mu.Unlock()
			if !known {
				return notFoundCluster(id)
			}
			if action := paramValue(r, "action"); action != "" {
				return newErr(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+action)
			}
			return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "Method POST not supported")
		}
		return s.clusterAction(w, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.opts.ClusterName
	if id != s.opts.ClusterID {
		mc := s.prov.clusters[id]
		if mc == nil {
			return notFoundCluster(id)
		}
		mc.kubeconfigs++
		name = mc.name
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"type": "generateKubeConfigOutput", "baseType": "generateKubeConfigOutput",
		"config": kubeconfigYAML(simkit.BaseURL(r), id, name, "kubeconfig-"+s.opts.UserID+":"+randName(54)),
	})
	return nil
}

// kubeconfigYAML is the kubeconfig Rancher generates: one cluster whose
// server is Rancher's proxy to it, one user with a bearer token.
func kubeconfigYAML(b, id, name, token string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		"apiVersion: v1",
		"kind: Config",
		"clusters:",
		"- name: " + q(name),
		"  cluster:",
		"    server: " + q(b+"/k8s/clusters/"+id),
		"",
		"users:",
		"- name: " + q(name),
		"  user:",
		"    token: " + q(token),
		"",
		"contexts:",
		"- name: " + q(name),
		"  context:",
		"    user: " + q(name),
		"    cluster: " + q(name),
		"",
		"current-context: " + q(name),
		"",
	}, "\n")
}

// updateCluster renames a provisioned cluster (its display name; the v1
// object keeps its name), as PUT /v3/clusters/<id> {"name"} does.
func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("cluster")
	var in struct {
		Name *string `json:"name"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	if id == s.opts.ClusterID {
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "the simulator's own cluster "+id+" cannot be changed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mc := s.prov.clusters[id]
	if mc == nil {
		return notFoundCluster(id)
	}
	if in.Name != nil {
		if *in.Name == "" {
			return newErr(http.StatusUnprocessableEntity, "NotNullable", "name")
		}
		mc.name = *in.Name
	}
	simkit.WriteJSON(w, http.StatusOK, s.mgmtClusterRep(simkit.BaseURL(r), mc, false))
	return nil
}

// deleteCluster removes a provisioned cluster with everything in it.
func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("cluster")
	if id == s.opts.ClusterID {
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "the simulator's own cluster "+id+" cannot be deleted")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mc := s.prov.clusters[id]
	if mc == nil {
		return notFoundCluster(id)
	}
	rep := s.mgmtClusterRep(simkit.BaseURL(r), mc, false)
	s.removeCluster(id)
	rep["state"] = "removing"
	rep["transitioning"] = "yes"
	simkit.WriteJSON(w, http.StatusOK, rep)
	return nil
}

// createToken makes a registration token for a cluster; Rancher allows
// several per cluster, and so does the simulator.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) *apiError {
	var in struct {
		ClusterID string `json:"clusterId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	if in.ClusterID == "" {
		return missingRequired("clusterId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.knownCluster(in.ClusterID) {
		return invalidReference("clusterId", `clusters.management.cattle.io "`+in.ClusterID+`" not found`)
	}
	t := &regToken{clusterID: in.ClusterID, token: randName(54), uuid: simkit.NewUUID(), created: s.now()}
	for t.id == "" || s.prov.tokens[t.id] != nil {
		t.name = "crt-" + randName(5)
		t.id = in.ClusterID + ":" + t.name
	}
	s.prov.tokens[t.id] = t
	s.log.Debug("registration token created", "id", t.id)
	simkit.WriteJSON(w, http.StatusCreated, tokenRep(simkit.BaseURL(r), t))
	return nil
}

// caChecksum stands for the sha256 of Rancher's CA certificate that the
// node commands pin.
const caChecksum = "0000000000000000000000000000000000000000000000000000000000000000"

func tokenRep(b string, t *regToken) map[string]any {
	self := b + "/v3/clusterRegistrationTokens/" + t.id
	manifest := b + "/v3/import/" + t.token + "_" + t.clusterID + ".yaml"
	install := " " + b + "/system-agent-install.sh | sudo  sh -s - --server " + b +
		" --label 'cattle.io/os=linux' --token " + t.token
	m := map[string]any{
		"id": t.id, "name": t.name, "type": "clusterRegistrationToken", "baseType": "clusterRegistrationToken",
		"clusterId": t.clusterID, "namespaceId": t.clusterID, "uuid": t.uuid,
		"token":               t.token,
		"manifestUrl":         manifest,
		"command":             "kubectl apply -f " + manifest,
		"insecureCommand":     "curl --insecure -sfL " + manifest + " | kubectl apply -f -",
		"nodeCommand":         "curl -fL" + install + " --ca-checksum " + caChecksum,
		"insecureNodeCommand": "curl --insecure -fL" + install,
		"windowsNodeCommand":  "",
		"annotations":         map[string]string{}, "labels": map[string]string{},
		"links":   map[string]string{"self": self, "update": self, "remove": self, "cluster": b + "/v3/clusters/" + t.clusterID},
		"actions": map[string]string{},
	}
	timestamps(m, t.created)
	active(m)
	return m
}

type clusterBindingBody struct {
	ClusterID        string `json:"clusterId"`
	RoleTemplateID   string `json:"roleTemplateId"`
	UserID           string `json:"userId"`
	UserPrincipalID  string `json:"userPrincipalId"`
	GroupID          string `json:"groupId"`
	GroupPrincipalID string `json:"groupPrincipalId"`
}

// createClusterBinding validates as norman and Rancher's webhook do (see
// createBinding); the name derives from subject, role and cluster, so an
// identical binding is a 409.
func (s *Server) createClusterBinding(w http.ResponseWriter, r *http.Request) *apiError {
	var in clusterBindingBody
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case in.ClusterID == "":
		return missingRequired("clusterId")
	case in.RoleTemplateID == "":
		return missingRequired("roleTemplateId")
	case !s.prov.clusterRoles[in.RoleTemplateID]:
		return invalidReference("roleTemplateId", `roletemplates.management.cattle.io "`+in.RoleTemplateID+`" not found`)
	case !s.knownCluster(in.ClusterID):
		return invalidReference("clusterId", `clusters.management.cattle.io "`+in.ClusterID+`" not found`)
	}
	user := in.UserID != "" || in.UserPrincipalID != ""
	group := in.GroupID != "" || in.GroupPrincipalID != ""
	if btoi(user)+btoi(group) != 1 {
		return invalidBody("binding must target either a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId]")
	}
	cb := &clusterBinding{clusterID: in.ClusterID, roleTemplateID: in.RoleTemplateID,
		userID: in.UserID, userPrincipalID: in.UserPrincipalID, groupID: in.GroupID, groupPrincipalID: in.GroupPrincipalID,
		creatorID: s.opts.UserID, uuid: simkit.NewUUID(), created: s.now()}
	cb.name = "crtb-" + derivedName(cb.subject()+"/"+cb.roleTemplateID+"/"+cb.clusterID)
	cb.id = cb.clusterID + ":" + cb.name
	if s.prov.crtbs[cb.id] != nil {
		return alreadyExists(`clusterroletemplatebindings.management.cattle.io "` + cb.name + `" already exists`)
	}
	s.prov.crtbs[cb.id] = cb
	simkit.WriteJSON(w, http.StatusCreated, clusterBindingRep(simkit.BaseURL(r), cb))
	return nil
}

func clusterBindingRep(b string, cb *clusterBinding) map[string]any {
	self := b + "/v3/clusterRoleTemplateBindings/" + cb.id
	m := map[string]any{
		"id": cb.id, "name": cb.name, "type": "clusterRoleTemplateBinding", "baseType": "clusterRoleTemplateBinding",
		"clusterId": cb.clusterID, "roleTemplateId": cb.roleTemplateID, "namespaceId": nil,
		"userId": nullable(cb.userID), "userPrincipalId": nullable(cb.userPrincipalID),
		"groupId": nullable(cb.groupID), "groupPrincipalId": nullable(cb.groupPrincipalID),
		"creatorId": cb.creatorID, "uuid": cb.uuid,
		"annotations": map[string]string{}, "labels": map[string]string{},
		"links": map[string]string{
			"self": self, "update": self, "remove": self,
			"cluster":      b + "/v3/clusters/" + cb.clusterID,
			"roleTemplate": b + "/v3/roleTemplates/" + cb.roleTemplateID,
		},
		"actions": map[string]string{},
	}
	timestamps(m, cb.created)
	active(m)
	return m
}

// randLower is n characters of [a-z0-9], as in Rancher's c-m-… ids.
func randLower(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// derivedName is the hash-derived part of a binding name (as bindingName):
// the same subject, role and scope always give the same name.
func derivedName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])[:10])
}

func sortByID(data []map[string]any) {
	sort.Slice(data, func(i, j int) bool { return fmt.Sprint(data[i]["id"]) < fmt.Sprint(data[j]["id"]) })
}
