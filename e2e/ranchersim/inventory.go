package ranchersim

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Inventory is everything the provisioning parts hold. The simulator's
// own cluster (Options.ClusterID) and its projects are not in it.
type Inventory struct {
	ProvisioningClusters []ProvisioningCluster
	Clusters             []Cluster
	Nodes                []Node
	Tokens               []RegistrationToken
	ClusterBindings      []ClusterBinding
	Secrets              []Secret
}

// Empty reports whether nothing is left: what a terminate must leave.
func (inv Inventory) Empty() bool {
	return len(inv.ProvisioningClusters)+len(inv.Clusters)+len(inv.Nodes)+len(inv.Tokens)+
		len(inv.ClusterBindings)+len(inv.Secrets) == 0
}

// String lists what is left, for a test's failure message.
func (inv Inventory) String() string {
	return fmt.Sprintf("provisioning clusters %v, clusters %v, nodes %v, tokens %v, cluster bindings %v, secrets %v",
		idsOf(inv.ProvisioningClusters, func(p ProvisioningCluster) string { return p.ID }),
		idsOf(inv.Clusters, func(c Cluster) string { return c.ID }),
		idsOf(inv.Nodes, func(n Node) string { return n.ID + "(" + n.Hostname + ")" }),
		idsOf(inv.Tokens, func(t RegistrationToken) string { return t.ID }),
		idsOf(inv.ClusterBindings, func(b ClusterBinding) string { return b.ID }),
		idsOf(inv.Secrets, func(s Secret) string { return s.ID }))
}

func idsOf[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

// snapshots copies every object of a store out for a test, ordered by
// id, each as view makes it (nil: as it is).
func snapshots[T any](st *simkit.Store[T], view func(*T) T) []T {
	var out []T
	for _, v := range st.ListByID(nil) {
		if view != nil {
			out = append(out, view(v))
		} else {
			out = append(out, *v)
		}
	}
	return out
}

// Inventory returns a snapshot, each list ordered by id. Reading it does
// not count as a poll.
func (s *Server) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Inventory{
		ProvisioningClusters: snapshots(s.prov.v1, nil),
		Clusters:             snapshots(s.prov.clusters, s.clusterSnapshot),
		Nodes:                snapshots(s.prov.nodes, s.snapshot),
		Tokens:               snapshots(s.prov.tokens, nil),
		ClusterBindings:      snapshots(s.prov.crtbs, nil),
		Secrets:              snapshots(s.prov.secrets, nil),
	}
}

// clusterSnapshot does not count as a read. Caller holds s.mu.
func (s *Server) clusterSnapshot(mc *Cluster) Cluster {
	c := *mc
	c.State, _ = s.clusterState(mc, false)
	return c
}

// ProvisioningClusterNamed returns the v1 cluster fleet-default/name.
func (s *Server) ProvisioningClusterNamed(name string) (ProvisioningCluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pc := s.prov.v1.Get(FleetNamespace + "/" + name); pc != nil {
		return *pc, true
	}
	return ProvisioningCluster{}, false
}

// ClusterByID returns a provisioned v3 cluster.
func (s *Server) ClusterByID(id string) (Cluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mc := s.prov.clusters.Get(id); mc != nil {
		return s.clusterSnapshot(mc), true
	}
	return Cluster{}, false
}

// Nodes returns the nodes of clusterID ("" for all), ordered by id.
func (s *Server) Nodes(clusterID string) []Node {
	return slices.DeleteFunc(s.Inventory().Nodes, func(n Node) bool { return clusterID != "" && n.ClusterID != clusterID })
}

// Drains returns the drain actions received, oldest first.
func (s *Server) Drains() []DrainCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]DrainCall(nil), s.prov.drains...)
}

// AddProvisioningCluster creates a provisioning cluster behind the
// client's back (someone using Rancher's UI), with the given metadata and
// an RKE2 spec, and returns it with its v3 id, which its status names at
// once.
func (s *Server) AddProvisioningCluster(name string, labels, annotations map[string]string) (ProvisioningCluster, error) {
	if !dnsLabelRe.MatchString(name) {
		return ProvisioningCluster{}, fmt.Errorf("ranchersim: %q is no cluster name", name)
	}
	body, err := json.Marshal(map[string]any{
		"type":     "provisioning.cattle.io.cluster",
		"metadata": map[string]any{"name": name, "namespace": FleetNamespace, "labels": labels, "annotations": annotations},
		"spec":     map[string]any{"kubernetesVersion": "v1.31.7+rke2r1", "rkeConfig": map[string]any{}},
	})
	if err != nil {
		return ProvisioningCluster{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := &ProvisioningCluster{ID: FleetNamespace + "/" + name, Namespace: FleetNamespace, Name: name, uid: simkit.NewUUID(),
		Body: body, Labels: cloneMap(labels), Annotations: cloneMap(annotations), Created: s.now(),
		reads: s.opts.Provisioning.ClusterNamePolls}
	if !s.storeProvCluster(pc) {
		return ProvisioningCluster{}, fmt.Errorf("ranchersim: cluster %s exists", pc.ID)
	}
	return *pc, nil
}
