// Package vcluster is the backend of the vcluster offering: one Waldur
// resource is one virtual cluster (vCluster) living in a namespace
// vc-<slug> of a host cluster, imported into Rancher as a generic
// ("imported") cluster the way Loft's vcluster-rancher-operator imports
// one. This package owns what lives on the host cluster (the namespace,
// its ResourceQuota and LimitRange, the usage of its pods and PVCs) and
// the reading of the virtual cluster's kubeconfig Secret; the create and
// terminate sagas of services/provisioner drive the Rancher import on top
// of it.
//
// The virtual cluster itself is made by a driver. With "external"
// someone else (an operator, a Helm release, a test) brings the Secret
// vc-<slug> (key config) into the namespace, and sitebus waits for it;
// "helm" (driver_helm.go) installs the vCluster chart embedded in this
// package, whose control plane writes that Secret; "platform"
// (driver_platform.go) writes a vCluster Platform VirtualClusterInstance
// and the platform's vCluster writes it. It is the one contract
// every driver converges on in Loft's operator too: a Secret holding a
// kubeconfig for a kube-apiserver.
//
// Access (member sync, run by the membership service) keeps the imported
// cluster's role template bindings equal to member_source: the Waldur
// team's Keycloak role groups c_<uuid hex>_<role> (rancher-cluster's
// names), or the users and groups of the Rancher project, as Loft syncs
// project members; role_mapping picks each one's cluster role. Only the
// bindings it marked as its own are ever removed.
package vcluster
