package ranchersim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

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

// importedState is the state of an imported cluster: pending until its
// agent connected. Caller holds s.mu.
func (s *Server) importedState(mc *Cluster) (state, message string) {
	if s.agents[mc.ID] {
		return "active", ""
	}
	return "pending", "Waiting for API to be available"
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
	s.mu.Lock()
	known := len(s.prov.tokens.ListByID(func(t *RegistrationToken) bool { return t.ClusterID == clusterID && t.Token == token })) > 0
	s.mu.Unlock()
	if !known {
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
	if s.agents == nil {
		s.agents = map[string]bool{}
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
// one here: the rancher-cluster tests count the tokens Mastermind's flow
// creates. Caller holds s.mu.
func (s *Server) issueDefaultToken(mc *Cluster) {
	if !s.importedCluster(mc) {
		return
	}
	t := &RegistrationToken{ClusterID: mc.ID, Token: randName(54), uuid: simkit.NewUUID(), Created: s.now(), name: DefaultTokenName}
	t.ID = s.prov.tokens.Create(func() string { return mc.ID + ":" + DefaultTokenName }, t)
	s.log.Debug("default registration token issued", "id", t.ID)
}
