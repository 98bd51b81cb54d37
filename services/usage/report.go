package usage

import (
	"math"
	"slices"
	"time"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Anomaly is a measured value the reporter refuses to send: lower than what
// Waldur already has for the month (usage never decreases within a billing
// period), or a component Waldur holds twice.
type Anomaly struct {
	Component string
	Old, New  float64
	Reason    string
}

// Decision is what to do with one resource's usage for one billing period.
type Decision struct {
	// Send are the components to submit: new or grown ones. Empty means no
	// set_usage call at all.
	Send []waldur.ComponentUsage
	// Unchanged are the components Waldur has already, at this value.
	Unchanged []string
	// NotOffered are measured components the offering does not have.
	NotOffered []string
	Anomalies  []Anomaly
}

// Decide applies the Python agent's report rules (its usage
// reporter's report algorithm) to one resource and period: values
// rounded to two decimals;
// nothing sent when Waldur has them already (compared as math.isclose with
// rel 1e-9, abs 1e-6); a value below Waldur's, or duplicate records, is an
// anomaly and not sent; only components the offering has.
//
// One deliberate difference: the Python agent refuses the whole report of
// a resource when one component decreased, and resends every component
// when one changed. Here the decision is per component, so one anomaly
// does not hold back the others, and unchanged values are not rewritten
// (set_usage updates the components it names and leaves the others).
func Decide(measured map[string]float64, existing []waldur.ComponentUsageRecord, offered map[string]bool) Decision {
	have := map[string][]float64{}
	for _, r := range existing {
		v, err := r.Usage.Float64()
		if err != nil {
			v = math.NaN() // unreadable: counted as a record, never equal
		}
		have[r.Type] = append(have[r.Type], v)
	}
	var d Decision
	keys := make([]string, 0, len(measured))
	for k := range measured {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !offered[k] {
			d.NotOffered = append(d.NotOffered, k)
			continue
		}
		v := round2(measured[k])
		olds := have[k]
		switch {
		case len(olds) > 1:
			d.Anomalies = append(d.Anomalies, Anomaly{Component: k, Old: slices.Max(olds), New: v, Reason: "duplicate usage records"})
		case len(olds) == 1 && isClose(v, olds[0]):
			d.Unchanged = append(d.Unchanged, k)
		case len(olds) == 1 && v < olds[0]:
			d.Anomalies = append(d.Anomalies, Anomaly{Component: k, Old: olds[0], New: v, Reason: "usage lower than reported"})
		default:
			d.Send = append(d.Send, waldur.ComponentUsage{Type: k, Amount: v})
		}
	}
	return d
}

// round2 rounds half away from zero, as Python's round() on the values the
// agent sees (it differs only on exact binary halves, which quantities in
// cores and GiB are not after a division).
func round2(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*100) / 100
}

// isClose is Python's math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6).
func isClose(a, b float64) bool {
	return math.Abs(a-b) <= max(1e-9*max(math.Abs(a), math.Abs(b)), 1e-6)
}

// Convert turns a backend's usage (the units limits use) into the
// offering's: divided by unit_factor_reporting, or unit_factor when that
// is unset, as the Python backends divide by the factor limits are
// multiplied by. A factor that cannot divide (0, negative) leaves the
// value as it is.
func Convert(raw map[string]float64, components map[string]config.BackendComponent) map[string]float64 {
	out := make(map[string]float64, len(raw))
	for k, v := range raw {
		f := 1.0
		if c, ok := components[k]; ok {
			f = c.UnitFactor
			if c.UnitFactorReporting != nil {
				f = *c.UnitFactorReporting
			}
		}
		if f > 0 && !math.IsInf(f, 0) {
			v /= f
		}
		out[k] = v
	}
	return out
}

// Periods are the billing months to report at now (in loc), oldest first:
// the current month always; an earlier one of the last reportingPeriods
// only while now is within one report period of its end. Usage here is an
// allocation read at the moment of the cycle, not a history: the first
// reading of a month is the best there is for the end of the month before
// (no later than one period, as every reading), and after that nothing new
// can be known about a past month. (The Python agent asks the backend for
// a past month's report; the Kubernetes plugins have none, so they never
// close a month.)
func Periods(now time.Time, loc *time.Location, reportingPeriods int, period time.Duration) []time.Time {
	now = now.In(loc)
	cur := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	var out []time.Time
	for i := reportingPeriods - 1; i >= 1; i-- {
		start := cur.AddDate(0, -i, 0)
		end := start.AddDate(0, 1, 0)
		if now.Sub(end) < period {
			out = append(out, start)
		}
	}
	return append(out, cur)
}

// sameMonth reports whether a and b fall in one billing month in loc.
func sameMonth(a, b time.Time, loc *time.Location) bool {
	a, b = a.In(loc), b.In(loc)
	return a.Year() == b.Year() && a.Month() == b.Month()
}
