package provisioner

import (
	"encoding/json"
	"fmt"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Input is the input of both sagas.
type Input struct {
	// OfferingUUID is the rancher-cluster offering's UUID in hex.
	OfferingUUID string `json:"offering_uuid"`
	OrderUUID    string `json:"order_uuid"`
	ResourceUUID string `json:"resource_uuid"`
	// Resource is the Waldur resource as the plan names its objects.
	Resource ResourceRef `json:"resource"`
	// Attributes are the create order's attributes, verbatim.
	Attributes json.RawMessage `json:"attributes,omitempty"`
}

// ResourceRef is backend.Resource without limits or groups.
type ResourceRef struct {
	UUID         string `json:"uuid"`
	Name         string `json:"name"`
	Slug         string `json:"slug"`
	BackendID    string `json:"backend_id,omitempty"`
	ProjectUUID  string `json:"project_uuid,omitempty"`
	ProjectSlug  string `json:"project_slug,omitempty"`
	ProjectName  string `json:"project_name,omitempty"`
	CustomerUUID string `json:"customer_uuid,omitempty"`
	CustomerSlug string `json:"customer_slug,omitempty"`
	CustomerName string `json:"customer_name,omitempty"`
}

func (r ResourceRef) backend() backend.Resource {
	return backend.Resource{UUID: r.UUID, Name: r.Name, Slug: r.Slug, BackendID: r.BackendID,
		ProjectUUID: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
		CustomerUUID: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName}
}

func decodeInput(in saga.ActivityInput) (Input, error) {
	var v Input
	if err := in.DecodeInput(&v); err != nil {
		return v, err
	}
	if v.OfferingUUID == "" || v.ResourceUUID == "" {
		return v, bus.Terminal(fmt.Errorf("saga %s: input without offering or resource", in.SagaID))
	}
	return v, nil
}

// Outputs of the steps: what each made, by id, for the log, the saga's
// record (sitebus sagas show) and later steps. No secret is kept.

// TenantRecord is what the tenants step made in one zone.
type TenantRecord struct {
	OfferingUUID   string            `json:"offering_uuid"`
	Project        openstack.Project `json:"project"`
	UserID         string            `json:"user_id,omitempty"`
	NetworkID      string            `json:"network_id,omitempty"`
	SubnetID       string            `json:"subnet_id,omitempty"`
	RouterID       string            `json:"router_id,omitempty"`
	SecurityGroups []NamedID         `json:"security_groups,omitempty"`
}

// NamedID is an object by name and id.
type NamedID struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// TenantsOutput is the tenants step's output.
type TenantsOutput struct {
	Tenants []TenantRecord `json:"tenants"`
}

// ServerRecord is one VM the saga made, with its port, floating IP and
// volumes.
type ServerRecord struct {
	Name         string `json:"name"`
	OfferingUUID string `json:"offering_uuid"`
	// ProjectID is the tenant's project ("" for the zone credentials'
	// project, self-managed mode).
	ProjectID    string   `json:"project_id,omitempty"`
	ServerID     string   `json:"server_id,omitempty"`
	PortID       string   `json:"port_id,omitempty"`
	FloatingIPID string   `json:"floating_ip_id,omitempty"`
	FloatingIP   string   `json:"floating_ip,omitempty"`
	VolumeIDs    []string `json:"volume_ids,omitempty"`
	Addresses    []string `json:"addresses,omitempty"`
}

// ServersOutput is the load-balancers and nodes steps' output.
type ServersOutput struct {
	Servers []ServerRecord `json:"servers"`
}

// ClusterOutput is the cluster step's output.
type ClusterOutput struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Created bool   `json:"created"`
}

// TokenOutput is the registration-token step's output: the token's id,
// never its value (the vault step reads that again from Rancher).
type TokenOutput struct {
	ID string `json:"id"`
}

// WaitOutput is the wait-nodes step's output: empty when the cluster is
// active; NotReady says why not when the readiness deadline passed with
// the cluster kept.
type WaitOutput struct {
	NotReady string `json:"not_ready,omitempty"`
}

// AccessOutput is the access step's output.
type AccessOutput struct {
	CreatedGroups   []string `json:"created_groups,omitempty"`
	CreatedBindings []string `json:"created_bindings,omitempty"`
}
