package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

const (
	usageAZA = "11111111-1111-4111-8111-111111111111"
	usageAZB = "22222222-2222-4222-8222-222222222222"
)

// usageCloud answers Usage per zone and project ("" the admin's), for the
// owner asked; failing zones answer an error.
type usageCloud struct {
	usage   map[string]map[openstack.Owner]openstack.Usage // by zone/project
	failing map[string]bool                                // by zone UUID
}

type usageZoneFake struct {
	Zone // nil: only Usage is called
	c    *usageCloud
	key  string
}

func (z usageZoneFake) Usage(_ context.Context, o openstack.Owner) (openstack.Usage, error) {
	return z.c.usage[z.key][o], nil
}

func (c *usageCloud) Connect(_ context.Context, az ranchercluster.AZ) (Zone, error) {
	if c.failing[az.UUID] {
		return nil, errors.New("keystone: 503")
	}
	return usageZoneFake{c: c, key: az.UUID + "/"}, nil
}

func (c *usageCloud) Scoped(_ context.Context, admin Zone, p openstack.Project) (Zone, error) {
	return usageZoneFake{c: c, key: admin.(usageZoneFake).key + p.ID}, nil
}

func (c *usageCloud) Forget(string) {}

func usageRecord(t *testing.T, clusterID, resource, mode string, tenants []TenantRecord, nodes []ServerRecord) []byte {
	t.Helper()
	plan := &ranchercluster.Plan{Version: ranchercluster.PlanVersion, Mode: mode, ResourceUUID: resource}
	for _, tr := range tenants {
		plan.Tenants = append(plan.Tenants, ranchercluster.TenantPlan{OfferingUUID: tr.OfferingUUID})
	}
	for _, n := range nodes {
		plan.Nodes = append(plan.Nodes, ranchercluster.NodePlan{Name: n.Name, OfferingUUID: n.OfferingUUID})
	}
	p, err := plan.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(Record{Plan: p, Cluster: ClusterOutput{ID: clusterID}, Tenants: tenants, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestUsageMeterSumsTheClustersZones(t *testing.T) {
	settings := &ranchercluster.Settings{OpenStackOfferings: []ranchercluster.AZ{{UUID: usageAZA, Slug: "az-a"}, {UUID: usageAZB, Slug: "az-b"}}}
	const resA, resB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	managed := usageRecord(t, "c-managed", resA, ranchercluster.ModeManaged,
		[]TenantRecord{{OfferingUUID: usageAZA, Project: openstack.Project{ID: "p-a"}}, {OfferingUUID: usageAZB, Project: openstack.Project{ID: "p-b"}}},
		[]ServerRecord{{Name: "n1", OfferingUUID: usageAZA, ProjectID: "p-a"}})
	selfManaged := usageRecord(t, "c-self", resB, ranchercluster.ModeSelfManaged, nil,
		[]ServerRecord{{Name: "n1", OfferingUUID: usageAZA}, {Name: "n2", OfferingUUID: usageAZB}})
	cloud := func() *usageCloud {
		return &usageCloud{usage: map[string]map[openstack.Owner]openstack.Usage{
			usageAZA + "/p-a": {resA: {Nodes: 4, VCPUs: 20, RAMMB: 40960, StorageGB: 500}},
			usageAZB + "/p-b": {resA: {Nodes: 4, VCPUs: 20, RAMMB: 40960, StorageGB: 500}},
			// The zones' own projects: the self-managed cluster's VMs, and
			// another resource's that must not count.
			usageAZA + "/": {resB: {Nodes: 1, VCPUs: 2, RAMMB: 1536, StorageGB: 30}, "other": {Nodes: 9, VCPUs: 99}},
			usageAZB + "/": {resB: {Nodes: 2, VCPUs: 4, RAMMB: 4096, StorageGB: 60}},
		}, failing: map[string]bool{}}
	}
	tests := map[string]struct {
		ids     []string
		failing string
		want    map[string]map[string]float64
	}{
		"a managed cluster is its tenants' projects in every zone": {
			ids:  []string{"c-managed"},
			want: map[string]map[string]float64{"c-managed": {"nodes": 8, "cpu": 40, "ram": 80, "storage": 1000}},
		},
		"a self-managed cluster is its owner's VMs in the zones' own projects": {
			ids:  []string{"c-self"},
			want: map[string]map[string]float64{"c-self": {"nodes": 3, "cpu": 6, "ram": 5.5, "storage": 90}},
		},
		"a cluster this sitebus has no record of is left out": {
			ids:  []string{"c-managed", "c-unknown"},
			want: map[string]map[string]float64{"c-managed": {"nodes": 8, "cpu": 40, "ram": 80, "storage": 1000}},
		},
		"a cluster with a zone that cannot be read is left out, not reported short": {
			ids: []string{"c-managed", "c-self"}, failing: usageAZB,
			want: map[string]map[string]float64{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cloud()
			if tc.failing != "" {
				c.failing[tc.failing] = true
			}
			m := newUsageMeter(settings, c, func(context.Context) ([][]byte, error) { return [][]byte{managed, selfManaged, []byte("{")}, nil },
				slog.New(slog.DiscardHandler))
			got, err := m.UsageAll(context.Background(), tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, tc.want, maps.Equal) {
				t.Errorf("UsageAll = %v, want %v", got, tc.want)
			}
		})
	}
}
