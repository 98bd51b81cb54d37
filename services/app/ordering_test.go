package app

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
)

func TestOrderingReachesTheBus(t *testing.T) {
	tests := map[string]struct {
		in       config.Ordering
		want     bus.Ordering
		describe string
	}{
		"process mode, the default": {
			in:       config.Ordering{Mode: config.OrderingProcess, Slots: 32},
			want:     bus.Ordering{Mode: bus.OrderingProcess, Slots: 32},
			describe: "ordering: process:",
		},
		"cluster mode with its slots": {
			in:       config.Ordering{Mode: config.OrderingCluster, Slots: 16},
			want:     bus.Ordering{Mode: bus.OrderingCluster, Slots: 16},
			describe: "ordering: cluster, 16 slots",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Root{Sitebus: config.Sitebus{Ordering: tc.in}}
			got := BusOrdering(cfg)
			if got != tc.want {
				t.Errorf("BusOrdering = %+v, want %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("the bus refuses what the config accepted: %v", err)
			}
			if d := DescribeOrdering(cfg); !strings.HasPrefix(d, tc.describe) {
				t.Errorf("DescribeOrdering = %q, want it to start with %q", d, tc.describe)
			}
		})
	}
}
