package app

import (
	"slices"
	"strings"
	"testing"
)

func TestModeServices(t *testing.T) {
	tests := map[string]struct {
		mode string
		want []string
	}{
		"order_process runs the order poller (the STOMP bridge), the order lifecycles and what their sagas and team bindings call": {
			mode: ModeOrderProcess,
			want: []string{"stomp-bridge", "order", "membership", "keycloak-sync", "saga-coordinator", "cluster-provisioner"},
		},
		"event_process runs everything Waldur's events drive, flags included, but not usage reporting": {
			mode: ModeEventProcess,
			want: []string{"stomp-bridge", "order", "quota", "membership", "keycloak-sync", "saga-coordinator", "cluster-provisioner"},
		},
		"membership_sync runs membership, the Keycloak writer, the flag pass and the drift pass": {
			mode: ModeMembershipSync,
			want: []string{"quota", "drift", "membership", "keycloak-sync"},
		},
		"report runs the usage reporter alone": {
			mode: ModeReport,
			want: []string{"usage-reporter"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ModeServices(tc.mode)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("ModeServices(%q) = %v, %v; want %v", tc.mode, got, err, tc.want)
			}
		})
	}
}

// With the embedded NATS server a mode's process is alone on its bus: a
// service whose commands no service of the mode serves would wait forever.
func TestEveryModeServesTheCommandsItsServicesSend(t *testing.T) {
	for _, mode := range ModeNames {
		got, err := ModeServices(mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range got {
			for _, callee := range commandsTo[s] {
				if !slices.Contains(got, callee) {
					t.Errorf("mode %s runs %s, which sends commands to %s, but not %s", mode, s, callee, callee)
				}
			}
		}
	}
	for s := range commandsTo {
		if !slices.Contains(ServiceNames, s) {
			t.Errorf("commandsTo names an unknown service %q", s)
		}
	}
}

func TestSelectServices(t *testing.T) {
	tests := map[string]struct {
		mode           string
		only, fromFile []string
		want           []string
		wantErr        string
	}{
		"neither a mode nor --only runs every service": {
			want: ServiceNames,
		},
		"the file's sitebus.services without flags": {
			fromFile: []string{"order", "quota"}, want: []string{"order", "quota"},
		},
		"--only over the file's sitebus.services": {
			only: []string{"usage-reporter"}, fromFile: []string{"order"}, want: []string{"usage-reporter"},
		},
		"a mode over the file's sitebus.services": {
			mode: ModeReport, fromFile: []string{"order"}, want: []string{"usage-reporter"},
		},
		"a mode and --only together are refused": {
			mode: ModeOrderProcess, only: []string{"order"},
			wantErr: "--mode order_process and --only cannot be combined: the mode names its services itself (stomp-bridge, order,",
		},
		"an unknown mode names the valid ones": {
			mode:    "orders",
			wantErr: `unknown mode "orders" (the Python agent's modes: order_process, report, membership_sync, event_process)`,
		},
		"an unknown mode is named before a combination with --only": {
			mode: "sync", only: []string{"order"}, wantErr: `unknown mode "sync"`,
		},
		"an unknown service names the known ones": {
			only: []string{"orders"}, wantErr: `unknown service "orders" (known: stomp-bridge, order,`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := selectServices(tc.mode, tc.only, tc.fromFile)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("selectServices = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
