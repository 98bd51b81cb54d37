package okd

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Usage reads the project's usage from its quota's status.used, as the
// Python plugin does (the quota controller sums what the quota counts):
// requests.cpu in cores, requests.memory and requests.storage in GiB,
// pods. A project without quota uses nothing that is counted.
func (b *Backend) Usage(ctx context.Context, backendID string) (map[string]float64, error) {
	if _, err := b.getNamespace(ctx, backendID); err != nil {
		return nil, err
	}
	q, err := b.getQuota(ctx, backendID)
	if errors.Is(err, backend.ErrNotFound) {
		return b.quota.usage(nil)
	}
	if err != nil {
		return nil, err
	}
	return b.quota.usage(hardOf(q, "status", "used"))
}

// UsageAll reads the usage of many projects with one paged list of
// sitebus's quotas across the cluster, rather than a call per project.
// Projects without a sitebus quota are left out.
func (b *Backend) UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error) {
	wanted := make(map[string]bool, len(backendIDs))
	for _, id := range backendIDs {
		wanted[id] = true
	}
	out := map[string]map[string]float64{}
	var firstErr error
	err := b.listAll(ctx, b.dyn.Resource(quotaGVR), quotaListOptions(), func(q *unstructured.Unstructured) {
		if !wanted[q.GetNamespace()] {
			return
		}
		u, err := b.quota.usage(hardOf(q, "status", "used"))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		out[q.GetNamespace()] = u
	})
	if err != nil {
		return nil, wrapAPI("list", "ResourceQuotas "+QuotaName, err)
	}
	return out, firstErr
}
