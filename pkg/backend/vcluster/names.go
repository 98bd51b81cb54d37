package vcluster

import (
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// NamespacePrefix starts the host namespace of every virtual cluster, as
// Loft names a vCluster's namespace.
const NamespacePrefix = "vc-"

// Marks sitebus puts on what it makes, the ones every sitebus backend
// writes (the Rancher backend's waldur/managed, the resource UUID).
const (
	AnnotationManaged      = "waldur/managed"
	AnnotationResourceUUID = "sitebus.io/resource-uuid"
	// LabelManaged selects sitebus's namespaces in one list call.
	LabelManaged = "sitebus.io/vcluster"
	// Rancher's project placement: the label holds the project id, the
	// annotation <cluster>:<project> (what Rancher's UI writes when a
	// namespace is moved into a project).
	RancherProjectKey = "field.cattle.io/projectId"
)

// Objects of the host namespace.
const (
	QuotaName      = "vcluster-quota"
	LimitRangeName = "vcluster-limits"
)

// NamespaceName is the host namespace of r: vc-<slug>. The slug is used
// as it is: rewriting it could map two resources, of different tenants,
// to one namespace, so a slug that cannot make a namespace (over 63
// characters with the prefix, or not an RFC 1123 label) is refused.
func NamespaceName(r backend.Resource) (string, error) {
	if r.Slug == "" {
		return "", fault.Errorf(fault.Invalid, "Resource %s has no slug, cannot name its virtual cluster", r.UUID)
	}
	name := NamespacePrefix + r.Slug
	if err := kubeapi.ValidateName("Namespace name", name); err != nil {
		return "", err
	}
	return name, nil
}

// SecretName is the kubeconfig Secret of the virtual cluster of namespace
// ns: vc-<slug>, in ns, as vCluster's chart names it (vc-<release>).
func SecretName(ns string) string { return ns }

// ClusterName is the Rancher provisioning cluster of the virtual cluster
// of namespace ns. It is the namespace's name, so it is at most 63
// characters too.
func ClusterName(ns string) string { return ns }
