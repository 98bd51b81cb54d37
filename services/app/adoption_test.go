package app

import (
	"context"
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/waldur"
)

// lister answers like a Waldur that may ignore the backend_id filter.
type lister struct {
	res    []waldur.Resource
	filter waldur.ResourceFilter
}

func (l *lister) ListProviderResources(_ context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error) {
	l.filter = f
	return l.res, nil
}

func TestWaldurResources(t *testing.T) {
	ctx := context.Background()
	l := &lister{res: []waldur.Resource{
		{UUID: "r1", BackendID: "waldur-alpha", CustomerUUID: "c1", ProjectUUID: "p1"},
		{UUID: "r2", BackendID: "waldur-beta"},
	}}
	f := waldurResources{w: l, offering: "off1"}
	t.Run("by backend_id asks Waldur for live resources of the offering with it", func(t *testing.T) {
		got, err := f.ResourcesByBackendID(ctx, "waldur-alpha")
		if err != nil {
			t.Fatal(err)
		}
		if l.filter.OfferingUUID != "off1" || l.filter.BackendID != "waldur-alpha" || slices.Contains(l.filter.States, waldur.ResourceStateTerminated) {
			t.Errorf("filter %+v", l.filter)
		}
		if len(got) != 1 || got[0].UUID != "r1" || got[0].CustomerUUID != "c1" || got[0].ProjectUUID != "p1" {
			t.Errorf("got %+v, want r1 with its customer and project", got)
		}
	})
	t.Run("a server that ignores the filter makes no other resource a claimant", func(t *testing.T) {
		got, err := f.ResourcesByBackendID(ctx, "waldur-gamma")
		if err != nil || len(got) != 0 {
			t.Errorf("got %+v, %v; want none", got, err)
		}
	})
	t.Run("all lists every live resource", func(t *testing.T) {
		got, err := f.Resources(ctx)
		if err != nil || len(got) != 2 || l.filter.BackendID != "" {
			t.Errorf("got %+v, %v (filter %+v)", got, err, l.filter)
		}
	})
}
