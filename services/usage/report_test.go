package usage

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func rec(typ, usage string) waldur.ComponentUsageRecord {
	return waldur.ComponentUsageRecord{UUID: "u-" + typ, Type: typ, Usage: json.Number(usage)}
}

func TestDecide(t *testing.T) {
	all := map[string]bool{"cpu": true, "ram": true, "storage": true, "gpu": true}
	tests := map[string]struct {
		measured  map[string]float64
		existing  []waldur.ComponentUsageRecord
		offered   map[string]bool
		send      []waldur.ComponentUsage
		unchanged []string
		anomalies []Anomaly
		skipped   []string
	}{
		"first report sends every component": {
			measured: map[string]float64{"cpu": 1.5, "ram": 2},
			offered:  all,
			send:     []waldur.ComponentUsage{{Type: "cpu", Amount: 1.5}, {Type: "ram", Amount: 2}},
		},
		"unchanged usage is not re-sent": {
			measured:  map[string]float64{"cpu": 1.5, "ram": 2},
			existing:  []waldur.ComponentUsageRecord{rec("cpu", "1.50"), rec("ram", "2.00")},
			offered:   all,
			unchanged: []string{"cpu", "ram"},
		},
		"only the grown component is sent": {
			measured:  map[string]float64{"cpu": 3, "ram": 2},
			existing:  []waldur.ComponentUsageRecord{rec("cpu", "1.50"), rec("ram", "2.00")},
			offered:   all,
			send:      []waldur.ComponentUsage{{Type: "cpu", Amount: 3}},
			unchanged: []string{"ram"},
		},
		"a lower value is refused": {
			measured:  map[string]float64{"cpu": 1, "ram": 4},
			existing:  []waldur.ComponentUsageRecord{rec("cpu", "2.00"), rec("ram", "2.00")},
			offered:   all,
			send:      []waldur.ComponentUsage{{Type: "ram", Amount: 4}},
			anomalies: []Anomaly{{Component: "cpu", Old: 2, New: 1, Reason: "usage lower than reported"}},
		},
		"duplicate records are an anomaly": {
			measured:  map[string]float64{"cpu": 5},
			existing:  []waldur.ComponentUsageRecord{rec("cpu", "2.00"), rec("cpu", "3.00")},
			offered:   all,
			anomalies: []Anomaly{{Component: "cpu", Old: 3, New: 5, Reason: "duplicate usage records"}},
		},
		"components not in the offering are skipped": {
			measured: map[string]float64{"cpu": 1, "gpu": 2, "pods": 7},
			offered:  map[string]bool{"cpu": true},
			send:     []waldur.ComponentUsage{{Type: "cpu", Amount: 1}},
			skipped:  []string{"gpu", "pods"},
		},
		"two decimals": {
			measured: map[string]float64{"cpu": 0.125 + 1e-9, "ram": 1.0 / 3},
			offered:  all,
			send:     []waldur.ComponentUsage{{Type: "cpu", Amount: 0.13}, {Type: "ram", Amount: 0.33}},
		},
		"a change below the second decimal is unchanged": {
			measured:  map[string]float64{"ram": 2.004},
			existing:  []waldur.ComponentUsageRecord{rec("ram", "2.00")},
			offered:   all,
			unchanged: []string{"ram"},
		},
		"a zero usage is reported where Waldur has none": {
			measured: map[string]float64{"gpu": 0},
			offered:  all,
			send:     []waldur.ComponentUsage{{Type: "gpu", Amount: 0}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.measured, tc.existing, tc.offered)
			if !reflect.DeepEqual(d.Send, tc.send) {
				t.Errorf("send = %+v, want %+v", d.Send, tc.send)
			}
			if !reflect.DeepEqual(d.Unchanged, tc.unchanged) {
				t.Errorf("unchanged = %v, want %v", d.Unchanged, tc.unchanged)
			}
			if !reflect.DeepEqual(d.Anomalies, tc.anomalies) {
				t.Errorf("anomalies = %+v, want %+v", d.Anomalies, tc.anomalies)
			}
			if !reflect.DeepEqual(d.NotOffered, tc.skipped) {
				t.Errorf("not offered = %v, want %v", d.NotOffered, tc.skipped)
			}
		})
	}
}

func TestPeriods(t *testing.T) {
	tallinn, err := time.LoadLocation("Europe/Tallinn")
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := map[string]struct {
		now     time.Time
		loc     *time.Location
		periods int
		want    []time.Time
	}{
		"mid-month reports the current month only": {
			now: d("2026-05-15T12:00:00Z"), loc: time.UTC, periods: 2,
			want: []time.Time{d("2026-05-01T00:00:00Z")},
		},
		"previous month reported within one period of its end": {
			now: d("2026-05-01T00:10:00Z"), loc: time.UTC, periods: 2,
			want: []time.Time{d("2026-04-01T00:00:00Z"), d("2026-05-01T00:00:00Z")},
		},
		"previous month closed after one period": {
			now: d("2026-05-01T00:30:00Z"), loc: time.UTC, periods: 2,
			want: []time.Time{d("2026-05-01T00:00:00Z")},
		},
		"reporting_periods 1 never reports a past month": {
			now: d("2026-05-01T00:10:00Z"), loc: time.UTC, periods: 1,
			want: []time.Time{d("2026-05-01T00:00:00Z")},
		},
		"months start in the configured timezone": {
			// 22:10 UTC on 30 April is 01:10 on 1 May in Tallinn (UTC+3).
			now: d("2026-04-30T22:10:00Z"), loc: tallinn, periods: 2,
			want: []time.Time{time.Date(2026, 5, 1, 0, 0, 0, 0, tallinn)},
		},
		"january's previous month is december": {
			now: d("2027-01-01T00:05:00Z"), loc: time.UTC, periods: 3,
			want: []time.Time{d("2026-12-01T00:00:00Z"), d("2027-01-01T00:00:00Z")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Periods(tc.now, tc.loc, tc.periods, 30*time.Minute)
			if len(got) != len(tc.want) {
				t.Fatalf("periods = %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) {
					t.Errorf("period %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestConvert(t *testing.T) {
	mb := 1.0 / 1024
	half := 0.5
	components := map[string]config.BackendComponent{
		"cpu":     {UnitFactor: 1},
		"ram":     {UnitFactor: mb}, // Waldur in MB: GiB * 1024
		"storage": {UnitFactor: 1, UnitFactorReporting: &half},
		"gpu":     {UnitFactor: 0}, // cannot divide: as it is
	}
	got := Convert(map[string]float64{"cpu": 2, "ram": 2, "storage": 10, "gpu": 1, "extra": 3}, components)
	want := map[string]float64{"cpu": 2, "ram": 2048, "storage": 20, "gpu": 1, "extra": 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Convert = %v, want %v", got, want)
	}
}
