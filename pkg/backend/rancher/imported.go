package rancher

import (
	"context"
	"errors"
	"net/http"
)

// ImportedClusterSpec is a generic ("imported") cluster: a v1
// provisioning cluster with an empty spec, which Rancher turns into a v3
// cluster that waits for an agent to connect (what Loft's
// vcluster-rancher-operator makes for each virtual cluster).
type ImportedClusterSpec struct {
	Name         string
	ResourceUUID string
	// Labels are copied by Rancher onto the v3 cluster (Loft's operator
	// finds its clusters by them).
	Labels map[string]string
}

type importedPayload struct {
	Type     string          `json:"type"`
	Metadata payloadMetadata `json:"metadata"`
	Spec     struct{}        `json:"spec"`
}

// CreateImportedCluster makes the imported cluster with sitebus's
// ownership marks, or adopts the one of that name when it is this
// resource's (a retried create): Created tells which. A cluster of that
// name that is not this resource's is refused (backend.ErrNotManaged),
// untouched.
func (c *ClusterClient) CreateImportedCluster(ctx context.Context, spec ImportedClusterSpec) (ProvisioningCluster, error) {
	cs := ClusterSpec{Name: spec.Name, ResourceUUID: spec.ResourceUUID}
	if err := cs.validate(); err != nil {
		return ProvisioningCluster{}, err
	}
	if p, found, err := c.adopt(ctx, cs); found || err != nil {
		return p, err
	}
	body := importedPayload{Type: "provisioning.cattle.io.cluster",
		Metadata: payloadMetadata{Name: spec.Name, Namespace: c.ns, Labels: spec.Labels, Annotations: ownership(spec.ResourceUUID)}}
	var v v1Cluster
	err := c.api.do(ctx, http.MethodPost, "/v1/provisioning.cattle.io.clusters", "", body, &v)
	if errors.Is(err, ErrConflict) {
		p, found, err := c.adopt(ctx, cs)
		if err == nil && !found {
			return p, &APIError{kind: ErrConflict, msg: "Rancher refused cluster " + spec.Name + " as a duplicate but has none; retry"}
		}
		return p, err
	}
	if err != nil {
		return ProvisioningCluster{}, err
	}
	p := v.toProvisioningCluster()
	p.Created = true
	c.log.Info("created Rancher imported cluster", "cluster", p.ID, "resource", spec.ResourceUUID)
	return p, nil
}
