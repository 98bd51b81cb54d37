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
// Wire format follows Rancher: collections with type, resourceType, data,
// pagination, links; objects with id, type, baseType, links, state,
// created; errors as {"baseType":"error","type":"error","status":409,
// "code":"AlreadyExists","message":…}, except the 401, whose body is
// Rancher's odd {"type":"error","status":"401","message":"must
// authenticate"} (status a string, no code: rancher/rancher#14235).
//
// Behaviour that matters to a client and differs between Rancher releases
// is switchable: Rancher allows two projects with one name in a cluster
// (rancher/rancher#54084; Options.UniqueProjectNames turns on a 409), and
// since rancher/webhook#1340 (2.14) a PRTB's name is derived from its
// subject, role and project, so a duplicate binding is a 409
// (Options.AllowDuplicateBindings restores the older behaviour).
//
// It also provisions RKE2 custom clusters as Rancher 2.6+ does, for the
// cluster provisioner:
// v1 provisioning.cattle.io clusters and secrets, their v3 clusters, nodes
// (with the drain action), registration tokens and cluster role template
// bindings; nodes join through the sim-only POST /sim/system-agent/register
// (RegisterPath), which stands in for a VM running system-agent-install.sh.
// Progress is counted in reads, not time (provisioning.go, nodes.go).
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
