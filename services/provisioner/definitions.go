package provisioner

import (
	"time"

	"github.com/sitebus/sitebus/pkg/saga"
)

// Saga definitions of the rancher-cluster offering. The cluster-provisioner
// service registers them on its own coordinator (same bucket as the
// saga-coordinator's; a coordinator drives only the definitions it
// registered), because their activities call OpenStack, Rancher and Vault
// with the offering's credentials, which only this service holds.
const (
	// ClusterCreate plans the order (validation included), then makes per
	// zone the tenant and its load balancer, the Rancher cluster and its
	// token, the Vault objects, the nodes, waits for them, makes the
	// Keycloak groups and bindings, cleans Vault up and tells Waldur.
	ClusterCreate = "rancher-cluster-create"
	// ClusterTerminate drains and deletes the nodes, deletes the cluster,
	// the groups, the Vault objects and the OpenStack objects the create
	// made, in reverse, then tells Waldur.
	ClusterTerminate = "rancher-cluster-terminate"
)

// Activity names: cluster-provisioner.<what>.
const (
	actPlan          = "cluster-provisioner.plan"
	actForgetPlan    = "cluster-provisioner.forget-plan"
	actTenants       = "cluster-provisioner.tenants"
	actDeleteTenants = "cluster-provisioner.delete-tenants"
	actLBs           = "cluster-provisioner.load-balancers"
	actDeleteLBs     = "cluster-provisioner.delete-load-balancers"
	actCluster       = "cluster-provisioner.cluster"
	actDeleteCluster = "cluster-provisioner.delete-cluster"
	actToken         = "cluster-provisioner.registration-token"
	actVault         = "cluster-provisioner.vault"
	actVaultCleanup  = "cluster-provisioner.vault-cleanup"
	actNodes         = "cluster-provisioner.nodes"
	actDeleteNodes   = "cluster-provisioner.delete-nodes"
	actDrainNodes    = "cluster-provisioner.drain-and-delete-nodes"
	actWaitNodes     = "cluster-provisioner.wait-nodes"
	actAccess        = "cluster-provisioner.access"
	actDeleteAccess  = "cluster-provisioner.delete-access"
	actSettle        = "cluster-provisioner.settle"
	actLoadPlan      = "cluster-provisioner.load-plan"
	actArgoCD        = "cluster-provisioner.argocd"
	actDeleteArgoCD  = "cluster-provisioner.delete-argocd"
)

// Timeouts are how long the long steps may take.
type Timeouts struct {
	// Step bounds the short steps (one object per call). Default 5m.
	Step time.Duration
	// Nodes bounds the VMs' boot and their registration with Rancher
	// (Mastermind polls up to 100 minutes). Default 60m.
	Nodes time.Duration
	// Poll is how often the vcluster sagas' waits (kubeconfig Secret,
	// Rancher's readiness) look again. Default 2s.
	Poll time.Duration
}

func (t *Timeouts) setDefaults() {
	if t.Step == 0 {
		t.Step = 5 * time.Minute
	}
	if t.Nodes == 0 {
		t.Nodes = time.Hour
	}
	if t.Poll == 0 {
		t.Poll = 2 * time.Second
	}
}

// definitions returns the two sagas. Every action is ensure-style: a
// crashed attempt's objects are found by name and owner mark and adopted
// by the next attempt, so nothing is made twice. Each step's output
// records the ids of what it made, and its compensation removes exactly
// those, in reverse; a step that fails for good removes what it made
// itself (run.failed), since the saga does not compensate a failed step.
func definitions(t Timeouts) []saga.Definition {
	t.setDefaults()
	step := func(name, action, compensation string, timeout time.Duration) saga.Step {
		return saga.Step{Name: name, Action: action, Compensation: compensation, Timeout: timeout, MaxAttempts: stepAttempts, CompensationMaxAttempts: 10}
	}
	short, long := t.Step, t.Nodes+t.Step
	// Settling only talks to Waldur: a Waldur away for a while must not
	// undo a finished cluster, so it is retried for longer.
	settle := step("settle", actSettle, "", short)
	settle.MaxAttempts = 20
	return []saga.Definition{
		{Name: ClusterCreate, Steps: []saga.Step{
			step("plan", actPlan, "", short),
			step("tenants", actTenants, actDeleteTenants, short),
			step("load-balancers", actLBs, actDeleteLBs, long),
			step("cluster", actCluster, actDeleteCluster, short),
			step("registration-token", actToken, "", short),
			step("vault", actVault, actVaultCleanup, short),
			step("nodes", actNodes, actDeleteNodes, long),
			step("wait-nodes", actWaitNodes, "", long),
			step("access", actAccess, actDeleteAccess, short),
			step("argocd", actArgoCD, actDeleteArgoCD, short),
			step("vault-cleanup", actVaultCleanup, "", short),
			settle,
		}},
		{Name: ClusterTerminate, Steps: []saga.Step{
			step("plan", actLoadPlan, "", short),
			step("argocd", actDeleteArgoCD, "", short),
			step("access", actDeleteAccess, "", short),
			step("nodes", actDrainNodes, "", long),
			step("cluster", actDeleteCluster, "", short),
			step("vault", actVaultCleanup, "", short),
			step("load-balancers", actDeleteLBs, "", long),
			step("tenants", actDeleteTenants, "", long),
			step("forget", actForgetPlan, "", short),
			settle,
		}},
		updateDefinition(func(name, action, compensation string, kind int) saga.Step {
			if name == "settle" {
				return settle
			}
			if kind == 1 {
				return step(name, action, compensation, long)
			}
			return step(name, action, compensation, short)
		}),
	}
}
