package vcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
)

// PlanSync is Sync's dry run, for the drift pass: the bindings the member
// source wants that the imported virtual cluster in host namespace ns
// lacks (missing), and the bindings with sitebus's marks for the resource
// that the source no longer wants (stale), which Sync would make and
// remove. It changes nothing. Bindings without those marks are never
// stale, as Sync never removes them. A virtual cluster not imported has
// nothing to compare: no error.
func (a *Access) PlanSync(ctx context.Context, resourceUUID, ns string) (missing, stale []rancher.RoleBinding, err error) {
	ref := rancher.ClusterRef{Name: ClusterName(ns), ResourceUUID: resourceUUID}
	current, err := a.Rancher.ClusterRoleBindings(ctx, ref)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list the bindings of Rancher cluster %s: %w", ref, err)
	}
	desired, err := a.Desired(ctx, resourceUUID)
	if err != nil {
		return nil, nil, err
	}
	same := func(x rancher.RoleBinding) func(rancher.RoleBinding) bool {
		return func(y rancher.RoleBinding) bool { return x.RoleTemplateID == y.RoleTemplateID && x.SameSubject(y) }
	}
	for _, d := range desired {
		if !slices.ContainsFunc(current, same(d)) {
			missing = append(missing, d)
		}
	}
	for _, c := range current {
		if c.OwnedBy(resourceUUID) && !slices.ContainsFunc(desired, same(c)) {
			stale = append(stale, c)
		}
	}
	return missing, stale, nil
}
