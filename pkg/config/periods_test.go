package config

import (
	"testing"
	"time"
)

func TestEnvPeriodOverrides(t *testing.T) {
	const (
		order  = "WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES"
		report = "WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES"
		member = "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES"
		recon  = "WALDUR_SITE_AGENT_RECONCILIATION_PERIOD_MINUTES"
	)
	tests := map[string]struct {
		env     map[string]string
		sitebus []string
		want    Periods
	}{
		"defaults without env": {
			want: Periods{5 * time.Minute, 30 * time.Minute, 5 * time.Minute, 60 * time.Minute},
		},
		"every variable overrides its period": {
			env:  map[string]string{order: "1", report: "10", member: "2", recon: "15"},
			want: Periods{time.Minute, 10 * time.Minute, 2 * time.Minute, 15 * time.Minute},
		},
		"fractional minutes are accepted": {
			env:  map[string]string{order: "0.5", report: " 1.5 "},
			want: Periods{30 * time.Second, 90 * time.Second, 5 * time.Minute, time.Hour},
		},
		"sitebus periods win over env": {
			env:     map[string]string{order: "1", report: "10"},
			sitebus: []string{"sitebus:", "  periods:", "    order_process_period: 30s", "    reconciliation_period: 2h"},
			want:    Periods{30 * time.Second, 10 * time.Minute, 5 * time.Minute, 2 * time.Hour},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := mustParse(t, conf(nil, tc.sitebus...), envOf(tc.env))
			eq(t, "periods", r.Periods, tc.want)
		})
	}
}

func TestEnvPeriodErrors(t *testing.T) {
	tests := map[string]struct {
		env  map[string]string
		want []string
	}{
		"not a number": {
			env:  map[string]string{"WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES": "30m"},
			want: []string{`environment variable WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES: "30m" is not a number of minutes`},
		},
		"set but empty is not unset": {
			env:  map[string]string{"WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES": " "},
			want: []string{`environment variable WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES: is set but empty; unset it for the default of 30 minutes`},
		},
		"zero": {
			env:  map[string]string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES": "0"},
			want: []string{`environment variable WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES: "0" must be a positive number of minutes`},
		},
		"negative and NaN together": {
			env: map[string]string{
				"WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES": "-5",
				"WALDUR_SITE_AGENT_RECONCILIATION_PERIOD_MINUTES":  "NaN",
			},
			want: []string{
				`environment variable WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES: "-5" must be a positive number of minutes`,
				`environment variable WALDUR_SITE_AGENT_RECONCILIATION_PERIOD_MINUTES: "NaN" must be a positive number of minutes`,
			},
		},
		"overflowing": {
			env:  map[string]string{"WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES": "1e300"},
			want: []string{`environment variable WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES: "1e300" must be a positive number of minutes`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(conf(nil), "config.yaml", envOf(tc.env))
			wantProblems(t, err, tc.want...)
		})
	}
}
