package sagas

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

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
