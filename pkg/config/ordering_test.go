package config

import "testing"

func TestOrdering(t *testing.T) {
	tests := map[string]struct {
		lines   []string
		want    Ordering
		wantErr []string
	}{
		"missing section keeps process mode and 32 slots": {
			want: Ordering{Mode: OrderingProcess, Slots: 32},
		},
		"cluster mode with the default slots": {
			lines: []string{"sitebus:", "  ordering: {mode: cluster}"},
			want:  Ordering{Mode: OrderingCluster, Slots: 32},
		},
		"cluster mode with slots that divide the partitions": {
			lines: []string{"sitebus:", "  ordering:", "    mode: cluster", "    slots: 64"},
			want:  Ordering{Mode: OrderingCluster, Slots: 64},
		},
		"one slot is one message in flight cluster-wide": {
			lines: []string{"sitebus:", "  ordering: {mode: cluster, slots: 1}"},
			want:  Ordering{Mode: OrderingCluster, Slots: 1},
		},
		"unknown mode is refused": {
			lines:   []string{"sitebus:", "  ordering:", "    mode: global"},
			wantErr: []string{`config.yaml:9: sitebus.ordering.mode: "global" is not one of process, cluster`},
		},
		"empty mode is refused, not defaulted": {
			lines:   []string{"sitebus:", "  ordering:", `    mode: ""`},
			wantErr: []string{`config.yaml:9: sitebus.ordering.mode: "" is not one of process, cluster`},
		},
		"zero slots are refused": {
			lines:   []string{"sitebus:", "  ordering:", "    slots: 0"},
			wantErr: []string{`config.yaml:9: sitebus.ordering.slots: 0 does not divide the 256 partitions: use 1, 2, 4, 8, 16, 32, 64, 128 or 256`},
		},
		"slots that do not divide the partitions are refused": {
			lines:   []string{"sitebus:", "  ordering:", "    slots: 12"},
			wantErr: []string{`config.yaml:9: sitebus.ordering.slots: 12 does not divide the 256 partitions: use 1, 2, 4, 8, 16, 32, 64, 128 or 256`},
		},
		"more slots than partitions are refused": {
			lines:   []string{"sitebus:", "  ordering:", "    slots: 512"},
			wantErr: []string{`config.yaml:9: sitebus.ordering.slots: 512 does not divide the 256 partitions: use 1, 2, 4, 8, 16, 32, 64, 128 or 256`},
		},
		"negative slots are refused": {
			lines:   []string{"sitebus:", "  ordering:", "    slots: -16"},
			wantErr: []string{`config.yaml:9: sitebus.ordering.slots: -16 does not divide the 256 partitions: use 1, 2, 4, 8, 16, 32, 64, 128 or 256`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Parse(conf(nil, tc.lines...), "config.yaml", noEnv)
			if tc.wantErr != nil {
				wantProblems(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "ordering", r.Sitebus.Ordering, tc.want)
		})
	}
}
