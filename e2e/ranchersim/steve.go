package ranchersim

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// ProvisioningCluster is a provisioning.cattle.io/v1 Cluster as tests see
// it.
type ProvisioningCluster struct {
	ID        string // "fleet-default/<name>"
	Namespace string
	Name      string
	// ClusterID is its management (v3) cluster, c-m-xxxxxxxx.
	ClusterID   string
	Labels      map[string]string
	Annotations map[string]string
	// Body is the create request's body as sent, on which the
	// representation is built: compare it byte for byte, or decode it
	// (Spec).
	Body    json.RawMessage
	Created time.Time

	uid   string
	reads int
}

// Spec is the body's spec, decoded; nil when it has none.
func (p ProvisioningCluster) Spec() map[string]any {
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	_ = json.Unmarshal(p.Body, &m)
	return m.Spec
}

// Secret is a core/v1 Secret created through steve.
type Secret struct {
	ID, Namespace, Name string
	Type                string // the Secret's type (kubernetes.io/basic-auth)
	Labels, Annotations map[string]string
	// Data is as sent (base64 values); Body the request as sent.
	Data    map[string]string
	Body    json.RawMessage
	Created time.Time

	uid string
}

// dnsLabelRe is a Kubernetes object name as Rancher's webhook accepts for a
// provisioning cluster (an RFC 1123 label: it becomes a namespace-like
// name in several places).
var dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// v1Meta is the part of a v1 create body the simulator reads.
type v1Meta struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Type     string            `json:"type"`
}

// readV1Body reads a steve create body, keeping its bytes, and the
// namespace from the path or the body (the path wins, as steve's does).
func readV1Body(r *http.Request) ([]byte, v1Meta, *apiError) {
	var meta v1Meta
	body, _ := io.ReadAll(r.Body) // in memory: the call log read it
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, meta, steveErr(http.StatusUnprocessableEntity, "InvalidBodyContent", "failed to parse body: "+err.Error())
	}
	meta.Metadata.Namespace = cmp.Or(r.PathValue("ns"), meta.Metadata.Namespace)
	if meta.Metadata.Namespace == "" {
		return nil, meta, steveErr(http.StatusUnprocessableEntity, "Invalid", "metadata.namespace: Required value")
	}
	return body, meta, nil
}

func (s *Server) createV1Cluster(r *http.Request) (int, any, *apiError) {
	body, meta, err := readV1Body(r)
	name := meta.Metadata.Name
	switch {
	case err != nil:
		return fail(err)
	case !dnsLabelRe.MatchString(name):
		return fail(steveErr(http.StatusUnprocessableEntity, "Invalid",
			`Cluster.provisioning.cattle.io "`+name+`" is invalid: metadata.name: Invalid value: "`+name+
				`": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`))
	}
	pc := &ProvisioningCluster{ID: meta.Metadata.Namespace + "/" + name, Namespace: meta.Metadata.Namespace, Name: name,
		uid: simkit.NewUUID(), Body: body, Labels: simkit.CloneOrEmpty(meta.Metadata.Labels),
		Annotations: simkit.CloneOrEmpty(meta.Metadata.Annotations), Created: s.now()}
	if !s.storeProvCluster(pc) {
		return fail(steveErr(http.StatusConflict, "AlreadyExists", `clusters.provisioning.cattle.io "`+name+`" already exists`))
	}
	s.log.Debug("provisioning cluster created", "id", pc.ID, "cluster", pc.ClusterID)
	return created(s.v1ClusterRep(simkit.BaseURL(r), pc, false))
}

// v1ClusterRep is the steve object: the create body as sent, with the
// server's metadata, links and status. read counts the call as a read of
// the cluster (and its nodes).
func (s *Server) v1ClusterRep(b string, pc *ProvisioningCluster, read bool) map[string]any {
	// The create checked that the body is an object with metadata.
	var m map[string]any
	_ = json.Unmarshal(pc.Body, &m)
	meta := m["metadata"].(map[string]any)
	if read {
		pc.reads++
	}
	self := b + "/v1/provisioning.cattle.io.clusters/" + pc.ID
	m["id"], m["type"], m["apiVersion"], m["kind"] = pc.ID, "provisioning.cattle.io.cluster", "provisioning.cattle.io/v1", "Cluster"
	m["links"] = map[string]string{"self": self, "update": self, "remove": self, "view": b + "/apis/provisioning.cattle.io/v1/namespaces/" + pc.Namespace + "/clusters/" + pc.Name}
	maps.Copy(meta, map[string]any{"name": pc.Name, "namespace": pc.Namespace, "uid": pc.uid, "generation": 1,
		"resourceVersion": strconv.Itoa(int(pc.Created.UnixNano() % 1e9)), "creationTimestamp": pc.Created.Format(time.RFC3339)})
	ready := false
	status := map[string]any{"observedGeneration": 1, "clientSecretName": pc.Name + "-kubeconfig"}
	if mc := s.prov.clusters.Get(pc.ClusterID); mc != nil {
		cs, _ := s.clusterState(mc, read)
		ready = cs == "active"
		if pc.reads >= s.opts.Provisioning.ClusterNamePolls {
			status["clusterName"] = mc.ID
		}
	}
	status["ready"], status["agentDeployed"] = ready, ready
	status["conditions"] = []map[string]any{
		{"type": "Ready", "status": map[bool]string{true: "True", false: "Unknown"}[ready], "lastUpdateTime": pc.Created.Format(time.RFC3339)},
		{"type": "Provisioned", "status": "True", "lastUpdateTime": pc.Created.Format(time.RFC3339)},
	}
	m["status"] = status
	meta["state"] = map[string]any{"name": map[bool]string{true: "active", false: "provisioning"}[ready], "error": false, "transitioning": !ready, "message": ""}
	return m
}

func (s *Server) createSecret(r *http.Request) (int, any, *apiError) {
	body, meta, err := readV1Body(r)
	if err != nil {
		return fail(err)
	}
	var in struct {
		XType string            `json:"_type"`
		Data  map[string]string `json:"data"`
	}
	_ = json.Unmarshal(body, &in)
	// steve's type field names the schema ("secret"); the Secret's own
	// type is _type. Waldur puts the Secret type into type, which steve
	// then takes as the Secret's.
	typ := in.XType
	if typ == "" && meta.Type != "secret" {
		typ = meta.Type
	}
	sec := &Secret{Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, uid: simkit.NewUUID(),
		Type: cmp.Or(typ, "Opaque"), Body: body, Labels: simkit.CloneOrEmpty(meta.Metadata.Labels),
		Annotations: simkit.CloneOrEmpty(meta.Metadata.Annotations), Data: simkit.CloneOrEmpty(in.Data), Created: s.now()}
	switch {
	case sec.Name == "" && meta.Metadata.GenerateName == "":
		return fail(steveErr(http.StatusUnprocessableEntity, "Invalid", "metadata.name: Required value: name or generateName is required"))
	case sec.Name == "":
		sec.ID = s.prov.secrets.Create(func() string {
			sec.Name = meta.Metadata.GenerateName + randName(5)
			return sec.Namespace + "/" + sec.Name
		}, sec)
	case !s.prov.secrets.Put(sec.Namespace+"/"+sec.Name, sec):
		return fail(steveErr(http.StatusConflict, "AlreadyExists", `secrets "`+sec.Name+`" already exists`))
	default:
		sec.ID = sec.Namespace + "/" + sec.Name
	}
	return created(secretRep(simkit.BaseURL(r), sec))
}

func secretRep(b string, sec *Secret) map[string]any {
	self := b + "/v1/secrets/" + sec.ID
	return map[string]any{
		"id": sec.ID, "type": "secret", "_type": sec.Type, "apiVersion": "v1", "kind": "Secret",
		"links": map[string]string{"self": self, "update": self, "remove": self},
		"metadata": map[string]any{
			"name": sec.Name, "namespace": sec.Namespace, "uid": sec.uid,
			"labels": simkit.CloneOrEmpty(sec.Labels), "annotations": simkit.CloneOrEmpty(sec.Annotations),
			"creationTimestamp": sec.Created.Format(time.RFC3339),
		},
		"data": simkit.CloneOrEmpty(sec.Data),
	}
}
