package vcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Loft's marks, as Loft's vcluster-rancher-operator reads and writes them
// (loft-sh/vcluster-rancher-operator): it imports each vCluster Service
// (label app=vcluster, not headless) unless the Service carries
// AnnotationSkipImport=true, and labels the Rancher provisioning cluster
// with the Service's UID and the host cluster's id, so that Rancher copies
// them onto its management cluster and the operator finds it again.
const (
	AnnotationSkipImport = "loft.sh/vcluster-skip-import"
	LabelServiceUID      = "loft.sh/vcluster-service-uid"
	LabelHostCluster     = "loft.sh/vcluster-host-cluster"
	// LabelVClusterApp selects a vCluster's Service (app=vcluster).
	LabelVClusterApp = "app"
)

// ImportMarks are Loft's marks found in a host namespace.
type ImportMarks struct {
	// SkipImport is true when the namespace or a vCluster Service in it
	// is annotated loft.sh/vcluster-skip-import=true: the virtual cluster
	// stays out of Rancher, as Loft's operator leaves it.
	SkipImport bool
	// ServiceUID is the vCluster Service's UID ("" without one), for the
	// label loft.sh/vcluster-service-uid.
	ServiceUID string
}

// Labels are the Loft labels the Rancher provisioning cluster carries:
// the service UID only when there is a vCluster Service.
func (m ImportMarks) Labels(hostClusterID string) map[string]string {
	out := map[string]string{}
	if m.ServiceUID != "" {
		out[LabelServiceUID] = m.ServiceUID
	}
	if hostClusterID != "" {
		out[LabelHostCluster] = hostClusterID
	}
	return out
}

// ImportMarks reads Loft's marks of host namespace ns (which must be the
// resource's: the namespace step checked it).
func (b *Backend) ImportMarks(ctx context.Context, ns string) (ImportMarks, error) {
	var m ImportMarks
	n, err := b.host.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return m, apiErr("get namespace "+ns, err)
	}
	m.SkipImport = n.Annotations[AnnotationSkipImport] == "true" || n.Labels[AnnotationSkipImport] == "true"
	svcs, err := b.host.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelVClusterApp + "=vcluster"})
	if err != nil {
		return m, apiErr("list vCluster services of "+ns, err)
	}
	for _, s := range svcs.Items {
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			continue // headless: Loft's operator skips these too
		}
		if s.Annotations[AnnotationSkipImport] == "true" {
			m.SkipImport = true
		}
		if m.ServiceUID == "" {
			m.ServiceUID = string(s.UID)
		}
	}
	return m, nil
}
