package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Periods are the intervals of the polling loops.
type Periods struct {
	OrderProcess   time.Duration `json:"order_process"`
	Report         time.Duration `json:"report"`
	MembershipSync time.Duration `json:"membership_sync"`
	Reconciliation time.Duration `json:"reconciliation"`
}

// envPeriods are the Python agent's period variables (common/__init__.py).
// Python parses only the order period as a float; fractions are accepted
// for all of them here, since no working setup depends on a crash.
var envPeriods = []struct {
	name       string
	defaultMin float64
	field      func(*Periods) *time.Duration
}{
	{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES", defaultOrderProcessMins, func(p *Periods) *time.Duration { return &p.OrderProcess }},
	{"WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES", defaultReportMins, func(p *Periods) *time.Duration { return &p.Report }},
	{"WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES", defaultMembershipMins, func(p *Periods) *time.Duration { return &p.MembershipSync }},
	{"WALDUR_SITE_AGENT_RECONCILIATION_PERIOD_MINUTES", defaultReconciliationMin, func(p *Periods) *time.Duration { return &p.Reconciliation }},
}

// periodsFromEnv returns the defaults overridden by the environment. Only
// an unset variable takes the default: the Python agent reads
// os.environ.get(name, default), so a variable set to "" makes it fail,
// and here it is an error rather than a silent default.
func periodsFromEnv(lookupEnv func(string) (string, bool)) (Periods, []*FieldError) {
	var p Periods
	var errs []*FieldError
	for _, e := range envPeriods {
		d := minutes(e.defaultMin)
		if v, ok := lookupEnv(e.name); ok {
			m, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			switch {
			case strings.TrimSpace(v) == "":
				errs = append(errs, envError(e.name, "is set but empty; unset it for the default of %g minutes", e.defaultMin))
				continue
			case err != nil:
				errs = append(errs, envError(e.name, "%q is not a number of minutes", v))
				continue
			case math.IsNaN(m) || m <= 0 || m > maxMinutes:
				errs = append(errs, envError(e.name, "%q must be a positive number of minutes", v))
				continue
			}
			d = minutes(m)
		}
		*e.field(&p) = d
	}
	return p, errs
}

// maxMinutes keeps the conversion to time.Duration from overflowing.
const maxMinutes = float64(math.MaxInt64) / float64(time.Minute)

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

func envError(name, format string, args ...any) *FieldError {
	path := "environment variable " + name
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...), canon: path}
}

// overriddenBy returns p with every non-zero field of o taking precedence.
func (p Periods) overriddenBy(o Periods) Periods {
	for _, d := range []struct{ dst, src *time.Duration }{
		{&p.OrderProcess, &o.OrderProcess},
		{&p.Report, &o.Report},
		{&p.MembershipSync, &o.MembershipSync},
		{&p.Reconciliation, &o.Reconciliation},
	} {
		if *d.src != 0 {
			*d.dst = *d.src
		}
	}
	return p
}

func (p *Periods) setDefaults() {
	*p = Periods{
		OrderProcess:   minutes(defaultOrderProcessMins),
		Report:         minutes(defaultReportMins),
		MembershipSync: minutes(defaultMembershipMins),
		Reconciliation: minutes(defaultReconciliationMin),
	}.overriddenBy(*p)
}
