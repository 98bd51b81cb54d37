package harness

import (
	"slices"
	"testing"
)

func TestChaosScheduleIsReplayableAndCoversEveryKind(t *testing.T) {
	procs := []string{"order-1", "order-2", "quota-1"}
	nodes := []string{"n1", "n2", "n3"}
	tests := map[string]struct {
		orders, faults int
		wantKinds      int // distinct kinds at least
	}{
		"short profile":           {orders: 120, faults: 6, wantKinds: len(FaultKinds)},
		"full profile":            {orders: 1000, faults: 12, wantKinds: len(FaultKinds)},
		"fewer faults than kinds": {orders: 50, faults: 2, wantKinds: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := ChaosSchedule(42, tc.orders, tc.faults, procs, nodes)
			if again := ChaosSchedule(42, tc.orders, tc.faults, procs, nodes); !slices.Equal(s, again) {
				t.Fatalf("the same seed gave two schedules:\n%s\n%s", FormatSchedule(s), FormatSchedule(again))
			}
			if len(s) != tc.faults {
				t.Fatalf("%d faults, want %d", len(s), tc.faults)
			}
			kinds := map[FaultKind]bool{}
			for i, f := range s {
				kinds[f.Kind] = true
				if f.AtSettled < 1 || f.AtSettled > tc.orders*8/10 || (i > 0 && f.AtSettled < s[i-1].AtSettled) {
					t.Errorf("fault %d fires at %d settled: want increasing counts in [1, %d]", i+1, f.AtSettled, tc.orders*8/10)
				}
				switch f.Kind {
				case FaultKillService:
					if !slices.Contains(procs, f.Target) {
						t.Errorf("fault %d kills %q, not one of %v", i+1, f.Target, procs)
					}
				case FaultRestartNATS:
					if !slices.Contains(nodes, f.Target) {
						t.Errorf("fault %d restarts %q, not one of %v", i+1, f.Target, nodes)
					}
				case FaultPauseAPIServer:
					if f.Pause <= 0 {
						t.Errorf("fault %d pauses the API server for %s", i+1, f.Pause)
					}
				}
			}
			if len(kinds) < tc.wantKinds {
				t.Errorf("%d kinds of fault, want at least %d:\n%s", len(kinds), tc.wantKinds, FormatSchedule(s))
			}
		})
	}
	if a, b := ChaosSchedule(1, 120, 6, procs, nodes), ChaosSchedule(2, 120, 6, procs, nodes); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 gave the same schedule:\n%s", FormatSchedule(a))
	}
}
