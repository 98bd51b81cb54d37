package app

import (
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/services/coordinator"
	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/quota"
	"github.com/sitebus/sitebus/services/stompbridge"
	"github.com/sitebus/sitebus/services/usage"
)

// The Python agent's modes (`waldur_site_agent -m MODE`, its AgentMode
// enum), which `sitebus run -m` accepts so that a systemd unit written for
// the Python agent starts sitebus unchanged but for the binary.
const (
	ModeOrderProcess   = "order_process"
	ModeEventProcess   = "event_process"
	ModeMembershipSync = "membership_sync"
	ModeReport         = "report"
)

// ModeNames lists the modes in the Python agent's order.
var ModeNames = []string{ModeOrderProcess, ModeReport, ModeMembershipSync, ModeEventProcess}

// modeWork are the services that do a mode's work in sitebus:
//   - order_process: the STOMP bridge, whose reconciler is sitebus's order
//     poller (the Python mode polls pending orders), the order lifecycle,
//     and the cluster-provisioner, the lifecycle of rancher-cluster orders.
//     Update orders need no quota service: the order service runs the
//     quota code itself. Flags are not order work: the Python agent applies
//     them in membership sync.
//   - event_process: the Python mode handles Waldur's STOMP events (orders,
//     user_role, resource) after one order and membership pass: the bridge,
//     the order lifecycles, membership, and quota, which resource events
//     drive (flags). Everything but usage reporting and the drift pass.
//   - membership_sync: membership (the team into groups and bindings, every
//     membership period), keycloak-sync (the only writer to Keycloak), and
//     quota, whose flag pass runs every membership period as the Python
//     membership sync pauses, downscales and restores, and drift, which
//     finds and repairs what was changed by hand since.
//   - report: the usage reporter.
var modeWork = map[string][]string{
	ModeOrderProcess:   {stompbridge.Name, orderflow.Name, provisioner.Name},
	ModeEventProcess:   {stompbridge.Name, orderflow.Name, provisioner.Name, membership.Name, quota.Name},
	ModeMembershipSync: {membership.Name, keycloaksync.Name, quota.Name, drift.Name},
	ModeReport:         {usage.Name},
}

// commandsTo lists, per service, the services it sends commands to and
// waits for; a process running a mode runs these too, so that with the
// embedded NATS server (one process, nothing else on its bus) a mode never
// starts work it cannot finish.
//   - order: creates and terminates with Keycloak or on Rancher are sagas,
//     which the saga coordinator runs; after a direct OKD create it asks
//     membership to bind the team.
//   - saga-coordinator: the sagas' steps go to keycloak-sync (groups),
//     order (objects, bindings, settle) and membership (the team).
//   - membership: keycloak-sync sets the groups' members.
//   - cluster-provisioner: keycloak-sync makes a cluster's groups (it runs
//     its own sagas).
var commandsTo = map[string][]string{
	orderflow.Name:   {coordinator.Name, membership.Name},
	coordinator.Name: {keycloaksync.Name, orderflow.Name, membership.Name},
	membership.Name:  {keycloaksync.Name},
	provisioner.Name: {keycloaksync.Name},
}

// ModeServices returns the services `sitebus run -m mode` runs: the mode's
// own and every service they send commands to, in start order.
func ModeServices(mode string) ([]string, error) {
	work, ok := modeWork[mode]
	if !ok {
		return nil, fmt.Errorf("unknown mode %q (the Python agent's modes: %s)", mode, strings.Join(ModeNames, ", "))
	}
	need := map[string]bool{}
	var add func(string)
	add = func(s string) {
		if need[s] {
			return
		}
		need[s] = true
		for _, c := range commandsTo[s] {
			add(c)
		}
	}
	for _, s := range work {
		add(s)
	}
	out := make([]string, 0, len(need))
	for _, s := range ServiceNames {
		if need[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// ModesHelp is one line per mode with its services, for `run --help`.
func ModesHelp() string {
	var b strings.Builder
	for _, m := range ModeNames {
		fmt.Fprintf(&b, "  %-16s %s\n", m, modeHelp(m))
	}
	return b.String()
}

func modeHelp(mode string) string {
	s, err := ModeServices(mode)
	if err != nil {
		return err.Error()
	}
	return strings.Join(s, ", ")
}
