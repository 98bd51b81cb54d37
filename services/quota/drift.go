package quota

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Drift is the quota's drift check of one offering (the drift service's
// Check): each live resource's flags against its object's status, and
// an active resource's limits against the quota in force. It compares
// only the objects the backend's List returns, the ones carrying
// sitebus's mark: an object sitebus did not make is neither reported nor
// touched.
type Drift struct {
	l *Limits
	o Offering
}

// DriftCheck is the drift check of the offering (its UUID as hex).
func (l *Limits) DriftCheck(offeringHex string) (*Drift, error) {
	o, ok := l.offerings[offeringHex]
	if !ok {
		return nil, fmt.Errorf("offering %s is not configured here", offeringHex)
	}
	return &Drift{l: l, o: o}, nil
}

// Find compares, changing nothing: one listing of Waldur's resources and
// one of the platform's objects (plus one read of each active object's
// limits when the listing does not carry them).
func (d *Drift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	resources, err := d.o.Waldur.ListProviderResources(ctx, passFilter(d.o))
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	objects, err := d.o.Backend.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the %s objects: %w", d.o.Backend.Type(), err)
	}
	status := make(map[string]backend.Status, len(objects))
	listed := make(map[string]map[string]float64, len(objects))
	for _, obj := range objects {
		status[obj.BackendID], listed[obj.BackendID] = obj.Status, obj.Limits
	}
	var out []contract.DriftFinding
	for i := range resources {
		res := &resources[i]
		c, ok := flagAction(res)
		if !ok {
			continue
		}
		have, managed := status[c.BackendID]
		if !managed {
			continue // not sitebus's (or gone): never touched
		}
		if have != c.To {
			out = append(out, contract.DriftFinding{Kind: contract.DriftFlags, Resource: res.UUID, Object: c.BackendID,
				Want: string(c.To), Have: string(have)})
			continue
		}
		if c.To != backend.StatusActive || len(res.Limits) == 0 {
			continue // a paused or downscaled quota is meant to differ
		}
		inForce := listed[c.BackendID]
		if inForce == nil {
			// The listing does not carry limits: one read per object.
			if inForce, err = d.o.Backend.Limits(ctx, c.BackendID); errors.Is(err, backend.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("read the limits of %s %s: %w", d.o.Backend.Type(), c.BackendID, err)
			}
		}
		if want, have, differ := limitsDiffer(res.Limits, inForce); differ {
			out = append(out, contract.DriftFinding{Kind: contract.DriftLimits, Resource: res.UUID, Object: c.BackendID, Want: want, Have: have})
		}
	}
	return out, nil
}

// limitsDiffer compares the components both sides name (a component
// Waldur has but the quota does not hold, such as a usage-only one, is
// not drift), and writes the differing ones as "cpu=4 ram=8".
func limitsDiffer(want, have map[string]float64) (w, h string, differ bool) {
	var ws, hs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		hv, ok := have[k]
		if !ok || math.Abs(hv-want[k]) < 1e-9 {
			continue
		}
		ws = append(ws, k+"="+strconv.FormatFloat(want[k], 'f', -1, 64))
		hs = append(hs, k+"="+strconv.FormatFloat(hv, 'f', -1, 64))
	}
	return strings.Join(ws, " "), strings.Join(hs, " "), len(ws) > 0
}

// Repair puts back what Waldur says now (the resource is read again: a
// finding may be older than a change made since), counted in
// sitebus_quota_changes_total by the kind of change with outcome
// "repaired".
func (d *Drift) Repair(ctx context.Context, f contract.DriftFinding) error {
	res, err := d.o.Waldur.GetResource(ctx, f.Resource)
	if err != nil {
		return fmt.Errorf("get resource %s: %w", f.Resource, err)
	}
	c, ok := flagAction(res)
	if !ok || c.BackendID != f.Object {
		return fault.Errorf(fault.Invalid, "resource %s no longer leads to %s", f.Resource, f.Object)
	}
	kind := c.Action
	switch {
	case f.Kind == contract.DriftLimits && c.To == backend.StatusActive:
		kind = "limits"
		_, err = d.o.Backend.SetLimits(ctx, c.BackendID, res.Limits)
	case f.Kind == contract.DriftFlags:
		apply := map[string]func(context.Context, string) error{
			"pause": d.o.Backend.Pause, "downscale": d.o.Backend.Downscale, "restore": d.o.Backend.Restore}[c.Action]
		err = apply(ctx, c.BackendID)
	default:
		return fmt.Errorf("resource %s changed since the finding; the next pass compares again", f.Resource)
	}
	if err != nil {
		d.l.applied.WithLabelValues(kind, "error").Inc()
		return fmt.Errorf("%s %s %s: %w", kind, d.o.Backend.Type(), c.BackendID, err)
	}
	d.l.applied.WithLabelValues(kind, "repaired").Inc()
	return nil
}
