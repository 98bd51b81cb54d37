package ranchercluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Zone UUIDs of the fixtures: a, b, c and d.
var zoneUUID = map[string]string{
	"a": "11111111-1111-4111-8111-111111111111",
	"b": "22222222-2222-4222-8222-222222222222",
	"c": "33333333-3333-4333-8333-333333333333",
	"d": "44444444-4444-4444-8444-444444444444",
}

// zoneRaw is one openstack_offering_uuid_list entry; zone a logs in with
// an inline application credential, the others name clouds.yaml entries.
func zoneRaw(name string) map[string]any {
	m := map[string]any{
		"uuid":                zoneUUID[name],
		"slug":                "az-" + name,
		"name":                "Zone " + name,
		"availability_zone":   "nova-" + name,
		"external_network_id": "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b",
		"dns_nameservers":     []any{"1.1.1.1"},
		"cloud":               "site-" + name,
	}
	if name == "a" {
		m["cloud"] = map[string]any{
			"auth": map[string]any{
				"auth_url":                      "https://keystone.example.com:5000/v3",
				"application_credential_id":     "ac-id",
				"application_credential_secret": "ac-s3cret",
			},
			"auth_type":   "v3applicationcredential",
			"region_name": "RegionOne",
		}
	}
	return m
}

// managedRaw is a working managed offering's backend_settings, zones a, b, c.
func managedRaw(kv ...any) map[string]any {
	m := map[string]any{
		"backend_url":                        "https://rancher.example.com",
		"username":                           "token-abc",
		"password":                           "s3cret-key",
		"base_image_name":                    "SLE Micro 6.1",
		"deployment_mode":                    "managed",
		"managed_rancher_server_flavor_name": "m1.large",
		"managed_rancher_server_system_volume_size_gb":        80,
		"managed_rancher_server_data_volume_size_gb":          100,
		"managed_rancher_worker_system_volume_size_gb":        40,
		"managed_rancher_load_balancer_flavor_name":           "m1.medium",
		"managed_rancher_load_balancer_system_volume_size_gb": 20,
		"openstack_offering_uuid_list":                        []any{zoneRaw("a"), zoneRaw("b"), zoneRaw("c")},
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// selfManagedRaw is a working self-managed offering's backend_settings.
func selfManagedRaw(kv ...any) map[string]any {
	m := managedRaw("deployment_mode", nil)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func mustSettings(t *testing.T, raw map[string]any) *Settings {
	t.Helper()
	s, err := DecodeSettings(raw)
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	return &s
}

// fakeCatalog serves every zone the same flavors, volume types, subnets
// and security groups, minus those removed per zone slug.
type fakeCatalog struct {
	flavors []Flavor
	types   []VolumeType
	subnets []string
	groups  []SecurityGroup
	// unrouted are subnet ids no router connects to an external network.
	unrouted []string
	// without[slug] are flavor, type or group names or subnet ids that
	// zone lacks.
	without map[string][]string
	err     error
	calls   int
}

func newCatalog() *fakeCatalog {
	return &fakeCatalog{
		flavors: []Flavor{
			{ID: "f-small", Name: "m1.small", VCPUs: 1, RAMMB: 2048, DiskGB: 20},
			{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAMMB: 4096, DiskGB: 40},
			{ID: "f-large", Name: "m1.large", VCPUs: 4, RAMMB: 8192, DiskGB: 80},
			{ID: "f-xlarge", Name: "m1.xlarge", VCPUs: 8, RAMMB: 16384, DiskGB: 160},
			{ID: "f-tiny", Name: "m1.tiny", VCPUs: 1, RAMMB: 512, DiskGB: 0},
		},
		types:   []VolumeType{{ID: "vt-ssd", Name: "ssd"}, {ID: "vt-hdd", Name: "hdd"}},
		subnets: []string{"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"},
		groups:  []SecurityGroup{{ID: "sg-default", Name: "default"}, {ID: "sg-nodes", Name: "k8s-nodes"}},
	}
}

func (c *fakeCatalog) Subnet(_ context.Context, az AZ, id string) (Subnet, bool, error) {
	c.calls++
	if c.err != nil {
		return Subnet{}, false, c.err
	}
	if !slices.Contains(c.subnets, id) || slices.Contains(c.without[az.Slug], id) {
		return Subnet{}, false, nil
	}
	return Subnet{ID: id}, true, nil
}

func (c *fakeCatalog) SubnetReaches(_ context.Context, _ AZ, id, _ string) (bool, error) {
	c.calls++
	if c.err != nil {
		return false, c.err
	}
	return !slices.Contains(c.unrouted, id), nil
}

func (c *fakeCatalog) SecurityGroups(_ context.Context, az AZ) ([]SecurityGroup, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	var out []SecurityGroup
	for _, g := range c.groups {
		if !slices.Contains(c.without[az.Slug], g.Name) {
			out = append(out, g)
		}
	}
	return out, nil
}

func (c *fakeCatalog) Flavors(_ context.Context, az AZ) ([]Flavor, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	var out []Flavor
	for _, f := range c.flavors {
		if !slices.Contains(c.without[az.Slug], f.Name) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (c *fakeCatalog) VolumeTypes(_ context.Context, az AZ) ([]VolumeType, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	var out []VolumeType
	for _, t := range c.types {
		if !slices.Contains(c.without[az.Slug], t.Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

// managedOrder is a managed order's attributes JSON with zones given by
// letter, 2 workers and Longhorn unless kv says otherwise.
func managedOrder(zones string, kv ...any) json.RawMessage {
	var list []any
	for _, z := range zones {
		list = append(list, zoneUUID[string(z)])
	}
	m := map[string]any{
		"name":                              "production-cluster",
		"worker_nodes_count":                2,
		"worker_nodes_flavor_name":          "m1.xlarge",
		"worker_nodes_data_volume_size":     102400,
		"openstack_offering_uuid_list":      list,
		"install_longhorn":                  true,
		"worker_nodes_longhorn_volume_size": 204800,
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func mustManaged(t *testing.T, raw json.RawMessage) ManagedAttributes {
	t.Helper()
	a, err := DecodeManagedAttributes(raw)
	if err != nil {
		t.Fatalf("attributes: %v", err)
	}
	return a
}

// resource is the Waldur resource of the fixtures' orders.
var resource = backend.Resource{
	UUID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", Name: "production-cluster", Slug: "production-cluster",
	ProjectSlug: "physics", CustomerSlug: "uni",
}

// wantTerminal checks err is exactly want and terminal.
func wantTerminal(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) {
		t.Errorf("%v is not terminal", err)
	}
	var ae *AttributeError
	if !errors.As(err, &ae) {
		t.Errorf("%T holds no *AttributeError", err)
	}
}

func jsonOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}
