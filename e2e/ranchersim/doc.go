// Package ranchersim is a stateful stand-in for the parts of Rancher's v3
// (norman) API that sitebus's Rancher backend uses, backed by a real
// Kubernetes API server for everything Rancher itself keeps in the
// downstream cluster.
//
// Projects and project role template bindings (PRTBs) live in memory, as
// Rancher keeps them in its management cluster. Namespaces are real
// Namespace objects created in the kube-apiserver given in Options.Kube,
// annotated the way Rancher does (field.cattle.io/projectId); importYaml
// applies its manifest to that API server, so a ResourceQuota is real and
// its status comes from the real controller manager; /k8s/clusters/<id>/…
// is reverse-proxied to it with the Options.Kube credentials.
//
// The wire formats are Rancher's, v3 (norman) and v1 (steve) alike, down
// to the odd 401 body (norman.go).
//
// It also provisions RKE2 custom clusters as Rancher 2.6+ does, for the
// cluster provisioner: v1 provisioning.cattle.io clusters and secrets,
// their v3 clusters, nodes (with the drain action), registration tokens
// and cluster role template bindings; nodes join through the sim-only
// RegisterPath. Progress is counted in reads, not time (provisioning.go).
//
// Tests drive it with Go methods on Server: inspect projects, bindings,
// imported YAML and the call log, seed objects created behind sitebus's
// back, and inject faults (AddFault, Down). Run as a process (cmd/
// ranchersim), the same is served without a key under /sim/.
//
// In front of the shared test cluster of package kube:
//
//	func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }
//
//	sim := ranchersim.NewTestServer(t, ranchersim.Options{Kube: kube.Shared(t).RESTConfig()})
//	o := sim.Options() // backend_url: sim.URL(), username/password: o.AccessKey/o.SecretKey, cluster_id: o.ClusterID
package ranchersim
