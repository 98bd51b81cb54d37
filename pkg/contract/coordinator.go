package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Coordinator is the saga coordinator service (services/coordinator): it
// runs the sagas below, each step a command to the service that owns it.
const Coordinator = "saga-coordinator"

// Saga definitions. They are data: what runs, in which order, and what
// undoes it.
const (
	// NamespaceCreate makes a platform object whose access goes through
	// identity-provider groups (the Python agent's Keycloak groups per
	// namespace): groups, then the object naming them, then the team into
	// the groups, then Waldur. A failure undoes
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

// Activity names: <service>.<what>. The coordinator registers one activity
// per name (services/coordinator).
const (
	ActEnsureGroups        = "keycloak-sync.ensure-groups"
	ActDeleteCreatedGroups = "keycloak-sync.delete-created-groups"
	ActDeleteGroups        = "keycloak-sync.delete-groups"
	ActCreateObject        = "order.create-object"
	ActDeleteCreatedObject = "order.delete-created-object"
	ActDeleteObject        = "order.delete-object"
	ActSyncTeam            = "membership.sync-resource"
	ActSettle              = "order.settle"
	ActBindGroup           = "order.bind-group"
	ActUnbindCreated       = "order.unbind-created-group"
	ActUnbindGroup         = "order.unbind-group"
	ActDeleteProjectGroups = "keycloak-sync.delete-project-groups"
)

// Definitions returns the sagas sitebus runs.
func Definitions(stepTimeout time.Duration) []saga.Definition {
	step := func(name, action, compensation string) saga.Step {
		return saga.Step{Name: name, Action: action, Compensation: compensation, Timeout: stepTimeout, MaxAttempts: 5, CompensationMaxAttempts: 10}
	}
	return []saga.Definition{
		{Name: NamespaceCreate, Steps: []saga.Step{
			step("groups", ActEnsureGroups, ActDeleteCreatedGroups),
			step("object", ActCreateObject, ActDeleteCreatedObject),
			step("team", ActSyncTeam, ""),
			step("settle", ActSettle, ""),
		}},
		{Name: NamespaceTerminate, Steps: []saga.Step{
			step("object", ActDeleteObject, ""),
			step("groups", ActDeleteGroups, ""),
			step("settle", ActSettle, ""),
		}},
		{Name: RancherProjectCreate, Steps: []saga.Step{
			step("object", ActCreateObject, ActDeleteCreatedObject),
			step("groups", ActEnsureGroups, ActDeleteCreatedGroups),
			step("binding", ActBindGroup, ActUnbindCreated),
			step("team", ActSyncTeam, ""),
			step("settle", ActSettle, ""),
		}},
		{Name: RancherProjectTerminate, Steps: []saga.Step{
			step("binding", ActUnbindGroup, ""),
			step("object", ActDeleteObject, ""),
			step("groups", ActDeleteProjectGroups, ""),
			step("settle", ActSettle, ""),
		}},
	}
}

// GroupSpec is one access group a namespace saga ensures.
type GroupSpec struct {
	Role        string `json:"role"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parent is the name of the group this one goes under (a Rancher
	// project's group under its cluster's), ensured before it.
	Parent string `json:"parent,omitempty"`
}

// NamespaceInput is the input of both namespace sagas.
type NamespaceInput struct {
	OfferingUUID string      `json:"offering_uuid"`
	OrderUUID    string      `json:"order_uuid"`
	ResourceUUID string      `json:"resource_uuid"`
	Groups       []GroupSpec `json:"groups"`
	// Object is the create request (protojson), for NamespaceCreate.
	Object json.RawMessage `json:"object,omitempty"`
	// BackendID is the object to delete, for NamespaceTerminate and
	// RancherProjectTerminate.
	BackendID string `json:"backend_id,omitempty"`
	// Bind is the group bound to the object (Rancher: the child group),
	// for the rancher-project sagas.
	Bind string `json:"bind,omitempty"`
}

// NewCreateInput builds NamespaceCreate's input.
func NewCreateInput(req *sitebusv1.CreateObjectRequest, groups []GroupSpec) (NamespaceInput, error) {
	obj, err := protojson.Marshal(req)
	if err != nil {
		return NamespaceInput{}, fmt.Errorf("encode create request: %w", err)
	}
	return NamespaceInput{
		OfferingUUID: req.OfferingUuid, OrderUUID: req.OrderUuid, ResourceUUID: req.GetResource().GetResourceUuid(),
		Groups: groups, Object: obj,
	}, nil
}

// SagaID is the saga of an order: one per order, so a repeated order event
// finds the saga already there.
func SagaID(orderHex string) string { return "order-" + orderHex }

// ProjectGroupsCleanup is the delete-groups request for a Rancher
// project's groups: children (named under their parent) first, parents
// only when no subgroup is left.
func ProjectGroupsCleanup(offeringUUID string, groups []GroupSpec) *sitebusv1.DeleteGroupsRequest {
	req := &sitebusv1.DeleteGroupsRequest{OfferingUuid: offeringUUID}
	for _, g := range slices.Backward(groups) {
		req.Groups = append(req.Groups, &sitebusv1.GroupRef{Name: g.Name, ParentName: g.Parent, IfNoSubgroups: g.Parent == ""})
	}
	return req
}
