package sagas

import (
	"time"

	"github.com/sitebus/sitebus/pkg/saga"
)

// Saga definitions. They are data: what runs, in which order, and what
// undoes it.
const (
	// NamespaceCreate makes a platform object whose access goes through
	// identity-provider groups (seed 001): groups, then the object naming
	// them, then the team into the groups, then Waldur. A failure undoes
	// the groups and the object this saga made (groups that existed before
	// stay).
	NamespaceCreate = "namespace-create"
	// NamespaceTerminate deletes the object, then its groups, then tells
	// Waldur.
	NamespaceTerminate = "namespace-terminate"
	// RancherProjectCreate makes a Rancher project (with its namespace and
	// quota), then the cluster's and the Waldur project's Keycloak groups,
	// binds the child group to the project, puts the team into it and
	// tells Waldur. A failure undoes the binding, the groups and the
	// project this saga made, and nothing that was there before.
	RancherProjectCreate = "rancher-project-create"
	// RancherProjectTerminate unbinds the child group, deletes the project
	// (Rancher removes its namespaces), deletes the child group when no
	// other project is bound to it and the parent when it has no
	// subgroups left, then tells Waldur.
	RancherProjectTerminate = "rancher-project-terminate"
)

// All are the definitions whose outcome settles an order.
var All = []string{NamespaceCreate, NamespaceTerminate, RancherProjectCreate, RancherProjectTerminate}

// Activity names: <service>.<what>.
const (
	actEnsureGroups        = "keycloak-sync.ensure-groups"
	actDeleteCreatedGroups = "keycloak-sync.delete-created-groups"
	actDeleteGroups        = "keycloak-sync.delete-groups"
	actCreateObject        = "order.create-object"
	actDeleteCreatedObject = "order.delete-created-object"
	actDeleteObject        = "order.delete-object"
	actSyncTeam            = "membership.sync-resource"
	actSettle              = "order.settle"
	actBindGroup           = "order.bind-group"
	actUnbindCreated       = "order.unbind-created-group"
	actUnbindGroup         = "order.unbind-group"
	actDeleteProjectGroups = "keycloak-sync.delete-project-groups"
)

// Definitions returns the sagas sitebus runs.
func Definitions(stepTimeout time.Duration) []saga.Definition {
	step := func(name, action, compensation string) saga.Step {
		return saga.Step{Name: name, Action: action, Compensation: compensation, Timeout: stepTimeout, MaxAttempts: 5, CompensationMaxAttempts: 10}
	}
	return []saga.Definition{
		{Name: NamespaceCreate, Steps: []saga.Step{
			step("groups", actEnsureGroups, actDeleteCreatedGroups),
			step("object", actCreateObject, actDeleteCreatedObject),
			step("team", actSyncTeam, ""),
			step("settle", actSettle, ""),
		}},
		{Name: NamespaceTerminate, Steps: []saga.Step{
			step("object", actDeleteObject, ""),
			step("groups", actDeleteGroups, ""),
			step("settle", actSettle, ""),
		}},
		{Name: RancherProjectCreate, Steps: []saga.Step{
			step("object", actCreateObject, actDeleteCreatedObject),
			step("groups", actEnsureGroups, actDeleteCreatedGroups),
			step("binding", actBindGroup, actUnbindCreated),
			step("team", actSyncTeam, ""),
			step("settle", actSettle, ""),
		}},
		{Name: RancherProjectTerminate, Steps: []saga.Step{
			step("binding", actUnbindGroup, ""),
			step("object", actDeleteObject, ""),
			step("groups", actDeleteProjectGroups, ""),
			step("settle", actSettle, ""),
		}},
	}
}
