package drift

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/telemetry"
)

// RepairsCounter is sitebus_drift_repairs_total{kind,outcome}, for the
// kinds of drift no other service's metric counts (labels, bindings, and
// limits of a virtual cluster's LimitRange): the quota's limits and flags
// count in sitebus_quota_changes_total, members in
// sitebus_membership_changes_total.
func RepairsCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	return telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitebus_drift_repairs_total",
		Help: "Drift the drift pass put back that no other service's metric counts, by kind (labels, bindings, limits) and outcome (repaired, error).",
	}, []string{"kind", "outcome"}))
}

// CountRepair counts one repair of kind in repairs (a RepairsCounter;
// nil: not exported) as repaired, or as error when err is set.
func CountRepair(repairs *prometheus.CounterVec, kind string, err error) {
	if repairs == nil {
		return
	}
	outcome := "repaired"
	if err != nil {
		outcome = "error"
	}
	repairs.WithLabelValues(kind, outcome).Inc()
}

// Marks is the drift check of the labels and annotations a backend
// writes on its objects: every object the backend manages (only
// sitebus's) is compared.
type Marks struct {
	Backend MarkBackend
	Repairs *prometheus.CounterVec
}

// MarkBackend is a backend that writes labels and annotations of its own.
type MarkBackend interface {
	Type() string
	backend.MarkDrifter
}

// Find compares every object the backend manages, changing nothing.
func (m *Marks) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	all, err := m.Backend.MarkDrift(ctx)
	if err != nil {
		return nil, fmt.Errorf("compare the labels of the %s objects: %w", m.Backend.Type(), err)
	}
	var out []contract.DriftFinding
	for _, id := range slices.Sorted(maps.Keys(all)) {
		var want, have []string
		for _, d := range all[id] {
			want = append(want, d.Key+"="+d.Want)
			h := d.Key + "=" + d.Have
			if d.Have == "" {
				h = d.Key + " missing"
			}
			have = append(have, h)
		}
		out = append(out, contract.DriftFinding{Kind: contract.DriftLabels, Object: id,
			Want: strings.Join(want, " "), Have: strings.Join(have, " ")})
	}
	return out, nil
}

// Repair writes the object's labels and annotations back.
func (m *Marks) Repair(ctx context.Context, f contract.DriftFinding) error {
	_, err := m.Backend.RepairMarks(ctx, f.Object)
	CountRepair(m.Repairs, contract.DriftLabels, err)
	return err
}
