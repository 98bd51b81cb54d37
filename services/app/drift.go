package app

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/quota"
)

// driftOfferings are the offerings the drift service compares, each with
// the checks of the services that own its objects.
func (d *deps) driftOfferings() ([]drift.Offering, error) {
	qo, err := d.quotaOfferings()
	if err != nil {
		return nil, err
	}
	return DriftOfferings(qo, d.log, d.reg)
}

// DriftOfferings builds the drift checks of the quota offerings qo:
// quota's own (limits and flags) for every offering with a backend's
// objects. The checks are the owning services' dry runs, so the drift
// pass decides nothing they would not; their repairs count in their
// metrics (reg; nil: not exported). The drift command builds the same.
func DriftOfferings(qo []quota.Offering, log *slog.Logger, reg prometheus.Registerer) ([]drift.Offering, error) {
	limits, err := quota.NewLimits(qo, log, reg)
	if err != nil {
		return nil, err
	}
	var out []drift.Offering
	for _, o := range qo {
		hex := o.Config.OfferingUUIDHex()
		check, err := limits.DriftCheck(hex)
		if err != nil {
			return nil, err
		}
		out = append(out, drift.Offering{UUID: hex, Name: o.Config.Name, Checks: []drift.Check{check}})
	}
	return out, nil
}
