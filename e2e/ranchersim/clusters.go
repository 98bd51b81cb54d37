package ranchersim

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Cluster is a provisioned management (v3) cluster as tests see it.
type Cluster struct {
	ID             string // c-m-xxxxxxxx
	Name           string // display name (PUT renames it)
	ProvisioningID string // "fleet-default/<name>"
	// FleetWorkspaceName is the provisioning cluster's namespace, as
	// Rancher sets it.
	FleetWorkspaceName string
	State              string // provisioning or active
	Created            time.Time

	// own marks the simulator's own (imported) cluster, which is kept
	// with the provisioned ones but is none of them.
	own bool
}

// RegistrationToken is a cluster registration token.
type RegistrationToken struct {
	ID, ClusterID, Token string
	Created              time.Time

	name, uuid string
}

// ClusterBinding is a cluster role template binding (CRTB).
type ClusterBinding struct {
	ID, Name, ClusterID, RoleTemplateID string
	Subject
	Created time.Time
	// Annotations and Labels are the binding's metadata as created (member
	// sync marks its own bindings with them).
	Annotations, Labels map[string]string

	creatorID, uuid string
}

// knownCluster reports whether id is the simulator's own cluster or a
// provisioned one. Caller holds s.mu.
func (s *Server) knownCluster(id string) bool { return s.prov.clusters.Get(id) != nil }

// clusterState is a provisioned cluster's state and message: active once
// it has an etcd, a control plane and a worker node and every node is
// active, as Rancher's message says. read counts as a poll of its nodes.
// Caller holds s.mu.
func (s *Server) clusterState(mc *Cluster, read bool) (state, message string) {
	if s.importedCluster(mc) { // pending until its agent connected
		if s.agents[mc.ID] {
			return "active", ""
		}
		return "pending", "Waiting for API to be available"
	}
	var etcd, cp, worker, all, activeNodes int
	for _, n := range s.prov.nodes.ListByID(func(n *Node) bool { return n.ClusterID == mc.ID }) {
		if read {
			s.observeNode(n)
		}
		all++
		if st, _, _ := s.nodeStatus(n); st != "registering" && st != "error" {
			activeNodes++
		}
		etcd += btoi(n.Etcd)
		cp += btoi(n.ControlPlane)
		worker += btoi(n.Worker)
	}
	switch {
	case etcd == 0 || cp == 0 || worker == 0:
		return "provisioning", "waiting for at least one control plane, etcd, and worker node to be registered"
	case activeNodes < all:
		return "provisioning", fmt.Sprintf("waiting for %d of %d nodes to become active", all-activeNodes, all)
	}
	return "active", ""
}

// clusterRep is a v3 cluster: the simulator's own (imported and always
// active, with namespaces and importYaml) or a provisioned one, whose read
// counts as a poll of its nodes. Caller holds s.mu.
func (s *Server) clusterRep(b string, mc *Cluster, read bool) map[string]any {
	self := b + "/v3/clusters/" + mc.ID
	fields := map[string]any{
		"id": mc.ID, "name": mc.Name, "description": "", "uuid": "", "internal": false, "driver": "imported", "provider": "rke2",
		"annotations": map[string]string{}, "labels": map[string]string{"provider.cattle.io": "rke2"},
	}
	links := map[string]string{"projects": b + "/v3/projects?clusterId=" + url.QueryEscape(mc.ID)}
	actions := map[string]string{"generateKubeconfig": self + "?action=generateKubeconfig"}
	if mc.own {
		links["namespaces"], links["subscribe"] = self+"/namespaces", self+"/subscribe"
		actions["importYaml"] = self + "?action=importYaml"
		m := normanObj("cluster", self, mc.Created, fields, links, actions)
		maps.DeleteFunc(m["links"].(map[string]string), func(k, _ string) bool { return k == "update" || k == "remove" })
		return m
	}
	fields["driver"], fields["fleetWorkspaceName"] = "rke2", cmp.Or(mc.FleetWorkspaceName, FleetNamespace)
	fields["nodeCount"] = s.prov.nodes.Count(func(n *Node) bool { return n.ClusterID == mc.ID })
	links["nodes"] = self + "/nodes"
	links["clusterRegistrationTokens"] = self + "/clusterregistrationtokens"
	links["clusterRoleTemplateBindings"] = self + "/clusterroletemplatebindings"
	m := normanObj("cluster", self, mc.Created, fields, links, actions)
	state, msg := s.clusterState(mc, read)
	m["state"], m["transitioning"], m["transitioningMessage"] = state, map[bool]string{true: "yes", false: "no"}[state != "active"], msg
	return m
}

// clusterAction serves POST /v3/clusters/<id>?action=…: importYaml on
// the simulator's own cluster (kube.go), generateKubeconfig on any.
func (s *Server) clusterAction(r *http.Request, _ struct{}) (any, error) {
	id, action := r.PathValue("cluster"), paramValue(r, "action")
	s.mu.Lock()
	mc, err := clustersType.find(s, id)
	var name string
	if err == nil {
		name = mc.Name
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case action == "generateKubeconfig":
		return map[string]any{
			"type": "generateKubeConfigOutput", "baseType": "generateKubeConfigOutput",
			"config": kubeconfigYAML(simkit.BaseURL(r), id, name, "kubeconfig-"+s.opts.UserID+":"+randName(54)),
		}, nil
	case action == "importYaml" && mc.own:
		return s.importYAML(r)
	case action == "":
		return nil, errNoPost
	}
	return nil, invalidAction(action)
}

// kubeconfigYAML is the kubeconfig Rancher generates: one cluster whose
// server is Rancher's proxy to it, one user with a bearer token.
func kubeconfigYAML(b, id, name, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]q
  cluster:
    server: %[2]q

users:
- name: %[1]q
  user:
    token: %[3]q

contexts:
- name: %[1]q
  context:
    user: %[1]q
    cluster: %[1]q

current-context: %[1]q
`, name, b+"/k8s/clusters/"+id, token)
}

// updateCluster renames a provisioned cluster (its display name; the v1
// object keeps its name), as PUT /v3/clusters/<id> {"name"} does; the
// simulator's own cannot be changed.
func (s *Server) updateCluster(mc *Cluster, in struct{ Name *string }) *apiError {
	switch {
	case mc.own:
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "the simulator's own cluster "+s.opts.ClusterID+" cannot be changed")
	case in.Name != nil && *in.Name == "":
		return errNotNull
	case in.Name != nil:
		mc.Name = *in.Name
	}
	return nil
}

// createToken makes a registration token for a cluster; Rancher allows
// several per cluster, and so does the simulator.
func (s *Server) createToken(r *http.Request, in struct{ ClusterID string }) (any, error) {
	switch {
	case in.ClusterID == "":
		return nil, missingRequired("clusterId")
	case !s.knownCluster(in.ClusterID):
		return nil, invalidReference("clusterId", `clusters.management.cattle.io "`+in.ClusterID+`" not found`)
	}
	t := &RegistrationToken{ClusterID: in.ClusterID, Token: randName(54), uuid: simkit.NewUUID(), Created: s.now()}
	t.ID = s.prov.tokens.Create(func() string { t.name = "crt-" + randName(5); return in.ClusterID + ":" + t.name }, t)
	s.log.Debug("registration token created", "id", t.ID)
	return simkit.Created(tokenRep(simkit.BaseURL(r), t)), nil
}

// caChecksum stands for the sha256 of Rancher's CA certificate that the
// node commands pin.
const caChecksum = "0000000000000000000000000000000000000000000000000000000000000000"

func tokenRep(b string, t *RegistrationToken) map[string]any {
	manifest := b + "/v3/import/" + t.Token + "_" + t.ClusterID + ".yaml"
	install := " " + b + "/system-agent-install.sh | sudo  sh -s - --server " + b +
		" --label 'cattle.io/os=linux' --token " + t.Token
	return normanObj("clusterRegistrationToken", b+"/v3/clusterRegistrationTokens/"+t.ID, t.Created, map[string]any{
		"id": t.ID, "name": t.name, "clusterId": t.ClusterID, "namespaceId": t.ClusterID, "uuid": t.uuid,
		"token":               t.Token,
		"manifestUrl":         manifest,
		"command":             "kubectl apply -f " + manifest,
		"insecureCommand":     "curl --insecure -sfL " + manifest + " | kubectl apply -f -",
		"nodeCommand":         "curl -fL" + install + " --ca-checksum " + caChecksum,
		"insecureNodeCommand": "curl --insecure -fL" + install,
		"windowsNodeCommand":  "",
		"annotations":         map[string]string{}, "labels": map[string]string{},
	}, map[string]string{"cluster": b + "/v3/clusters/" + t.ClusterID}, nil)
}

// createClusterBinding validates as norman and Rancher's webhook do (see
// createBinding); the name derives from subject, role and cluster, so an
// identical binding is a 409.
func (s *Server) createClusterBinding(r *http.Request, in bindingBody) (any, error) {
	if e := in.refusal("clusterId", in.ClusterID, DefaultClusterRoleTemplates,
		simkit.Refuse(!s.knownCluster(in.ClusterID), invalidReference("clusterId", `clusters.management.cattle.io "`+in.ClusterID+`" not found`)),
		simkit.Refuse(in.kinds() != 1, invalidBody("binding must target either a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId]"))); e != nil {
		return nil, e
	}
	cb := &ClusterBinding{ClusterID: in.ClusterID, RoleTemplateID: in.RoleTemplateID, Subject: in.Subject,
		Annotations: simkit.CloneOrEmpty(in.Annotations), Labels: simkit.CloneOrEmpty(in.Labels),
		creatorID: s.opts.UserID, uuid: simkit.NewUUID(), Created: s.now()}
	cb.Name = "crtb-" + derivedName(cb.principal()+"/"+cb.RoleTemplateID+"/"+cb.ClusterID)
	cb.ID = cb.ClusterID + ":" + cb.Name
	if !s.prov.crtbs.Put(cb.ID, cb) {
		return nil, alreadyExists(`clusterroletemplatebindings.management.cattle.io "` + cb.Name + `" already exists`)
	}
	return simkit.Created(clusterBindingRep(simkit.BaseURL(r), cb)), nil
}

func clusterBindingRep(b string, cb *ClusterBinding) map[string]any {
	return normanObj("clusterRoleTemplateBinding", b+"/v3/clusterRoleTemplateBindings/"+cb.ID, cb.Created, cb.fields(map[string]any{
		"id": cb.ID, "name": cb.Name, "clusterId": cb.ClusterID, "roleTemplateId": cb.RoleTemplateID, "namespaceId": nil,
		"creatorId": cb.creatorID, "uuid": cb.uuid,
		"annotations": simkit.CloneOrEmpty(cb.Annotations), "labels": simkit.CloneOrEmpty(cb.Labels),
	}), map[string]string{
		"cluster":      b + "/v3/clusters/" + cb.ClusterID,
		"roleTemplate": b + "/v3/roleTemplates/" + cb.RoleTemplateID,
	}, nil)
}

// Generic ("imported") clusters, as Loft's vcluster-rancher-operator and
// sitebus's vcluster offering make them: a v1 provisioning cluster with an
// empty spec. Rancher serves the agent's manifest at the registration
// token's manifestUrl, /v3/import/<token>_<cluster id>.yaml, without
// authentication (the token in the URL is the credential), and marks the
// cluster active once the agent connects back. An imported cluster needs
// no node roles.
//
// The simulator runs no agent: a test's stand-in (see ConnectAgent) tells
// it that the agent's objects exist in the imported cluster.

// importedCluster reports whether mc was provisioned with an empty spec.
// Caller holds s.mu.
func (s *Server) importedCluster(mc *Cluster) bool {
	pc := s.prov.v1.Get(mc.ProvisioningID)
	return pc != nil && len(pc.Spec()) == 0
}

// importManifest serves the agent's manifest of the token and cluster the
// file name gives; an unknown pair is a 404, as Rancher answers.
func (s *Server) importManifest(w http.ResponseWriter, r *http.Request) {
	file, ok := strings.CutSuffix(r.PathValue("file"), ".yaml")
	token, clusterID, found := strings.Cut(file, "_")
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	// The store's own lock will do: a token never changes.
	if s.prov.tokens.Find(func(t *RegistrationToken) bool { return t.ClusterID == clusterID && t.Token == token }) == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write([]byte(AgentManifest(simkit.BaseURL(r), token, clusterID)))
}

// AgentCredentialsSecret is the name of the agent's credentials Secret in
// namespace cattle-system for a token (Rancher names it by a hash of the
// token; the simulator by its first characters).
func AgentCredentialsSecret(token string) string {
	return "cattle-credentials-" + strings.ToLower(token[:min(7, len(token))])
}

// AgentManifest is the import manifest Rancher's systemtemplate renders,
// cut to the objects a test can see: the RBAC, namespace cattle-system,
// the credentials Secret, and the agent's Deployment and Service.
func AgentManifest(baseURL, token, clusterID string) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: proxy-clusterrole-kubeapiserver
rules:
- apiGroups: [""]
  resources: [nodes/metrics, nodes/proxy, nodes/stats, nodes/log, nodes/spec]
  verbs: [get, list, watch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: proxy-role-binding-kubernetes-master
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: proxy-clusterrole-kubeapiserver
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: kube-apiserver
---
apiVersion: v1
kind: Namespace
metadata:
  name: cattle-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: cattle
  namespace: cattle-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cattle-admin
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
- nonResourceURLs: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cattle-admin-binding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cattle-admin
subjects:
- kind: ServiceAccount
  name: cattle
  namespace: cattle-system
---
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s
  namespace: cattle-system
type: Opaque
data:
  url: %[2]s
  token: %[3]s
  namespace: %[4]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cattle-cluster-agent
  namespace: cattle-system
spec:
  selector:
    matchLabels: {app: cattle-cluster-agent}
  template:
    metadata:
      labels: {app: cattle-cluster-agent}
    spec:
      serviceAccountName: cattle
      containers:
      - name: cluster-register
        image: rancher/rancher-agent:v2.11.0
        env:
        - {name: CATTLE_SERVER, value: %[5]q}
        - {name: CATTLE_CA_CHECKSUM, value: %[6]q}
        - {name: CATTLE_CLUSTER, value: "true"}
        - {name: CATTLE_K8S_MANAGED, value: "true"}
        - {name: CATTLE_CREDENTIAL_NAME, value: %[1]s}
---
apiVersion: v1
kind: Service
metadata:
  name: cattle-cluster-agent
  namespace: cattle-system
spec:
  selector: {app: cattle-cluster-agent}
  ports:
  - {name: http, port: 80, targetPort: 80, protocol: TCP}
  - {name: https-internal, port: 443, targetPort: 444, protocol: TCP}
`, AgentCredentialsSecret(token), b64(baseURL), b64(token), b64(clusterID), baseURL, caChecksum)
}

// ConnectAgent marks the imported cluster's agent connected: the cluster
// turns active and its v1 status ready. A test's agent stand-in calls it
// once the agent's objects exist in the imported cluster.
func (s *Server) ConnectAgent(clusterID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc := s.prov.clusters.Get(clusterID)
	if mc == nil || mc.own || !s.importedCluster(mc) {
		return fmt.Errorf("ranchersim: %s is no imported cluster", clusterID)
	}
	s.agents[clusterID] = true
	return nil
}

// DefaultTokenName is the registration token Rancher's cluster controller
// makes for every new cluster, in the cluster's namespace (<c-m id>);
// Loft's vcluster-rancher-operator and sitebus read it rather than make
// one of their own.
const DefaultTokenName = "default-token"

// issueDefaultToken makes an imported cluster's default-token, as Rancher
// does when the management cluster appears. Only imported clusters get
// one here (storeProvCluster): the rancher-cluster tests count the tokens
// Mastermind's flow creates. Caller holds s.mu.
func (s *Server) issueDefaultToken(mc *Cluster) {
	t := &RegistrationToken{ClusterID: mc.ID, Token: randName(54), uuid: simkit.NewUUID(), Created: s.now(), name: DefaultTokenName}
	t.ID = s.prov.tokens.Create(func() string { return mc.ID + ":" + DefaultTokenName }, t)
	s.log.Debug("default registration token issued", "id", t.ID)
}
