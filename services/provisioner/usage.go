package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// The usage components of a rancher-cluster offering, in the units the
// usage reporter sends (before unit_factor): what the cluster's VMs take,
// load balancers left out, as Mastermind counts a cluster's nodes.
const (
	// ComponentNodes is the number of cluster nodes (servers and agents).
	ComponentNodes = "nodes"
	// ComponentCPU is the sum of the nodes' flavors' vCPUs.
	ComponentCPU = "cpu"
	// ComponentRAM is the sum of the nodes' flavors' RAM, in GiB.
	ComponentRAM = "ram"
	// ComponentStorage is the sum of the sizes of the nodes' volumes
	// (system and data), in GB as Cinder counts them.
	ComponentStorage = "storage"
)

// UsageMeter reads the usage of a rancher-cluster offering's clusters for
// the usage reporter (a usage.Meter and backend.UsageLister). It finds each
// cluster by its Waldur backend_id (the v3 cluster id) in the record the
// create stored (PlanBucket), and sums pkg/openstack's Usage over the
// zones and projects the record names; only the servers carrying the
// resource's ownership mark count, so nothing another tenant runs in a
// shared project is billed.
type UsageMeter struct {
	settings *ranchercluster.Settings
	cloud    OpenStack
	records  func(ctx context.Context) ([][]byte, error)
	log      *slog.Logger
}

// NewUsageMeter reads the records from js's PlanBucket; cloud reaches the
// offering's zones (NewOpenStack).
func NewUsageMeter(js jetstream.JetStream, s *ranchercluster.Settings, cloud OpenStack, log *slog.Logger) *UsageMeter {
	r := &kvRecords{js: js}
	return newUsageMeter(s, cloud, r.all, log)
}

func newUsageMeter(s *ranchercluster.Settings, cloud OpenStack, records func(context.Context) ([][]byte, error), log *slog.Logger) *UsageMeter {
	if log == nil {
		log = slog.Default()
	}
	return &UsageMeter{settings: s, cloud: cloud, records: records, log: log.With("backend", ranchercluster.Type)}
}

// Type is the offering's backend type.
func (m *UsageMeter) Type() string { return ranchercluster.Type }

// Usage reads one cluster's usage: backend.ErrNotFound when this sitebus
// has no record of it or could not read all its zones (logged).
func (m *UsageMeter) Usage(ctx context.Context, backendID string) (map[string]float64, error) {
	all, err := m.UsageAll(ctx, []string{backendID})
	if err != nil {
		return nil, err
	}
	u, ok := all[backendID]
	if !ok {
		return nil, fmt.Errorf("rancher-cluster %s: no usage read: %w", backendID, backend.ErrNotFound)
	}
	return u, nil
}

// UsageAll reads the clusters of backendIDs. A cluster whose record is
// missing (not made by this sitebus) is left out; so is one whose zones
// cannot all be read, because a partial sum would be reported as a
// decrease (or, for a new month, sent too low).
func (m *UsageMeter) UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error) {
	raws, err := m.records(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster records: %w", err)
	}
	want := map[string]bool{}
	for _, id := range backendIDs {
		want[id] = true
	}
	out := map[string]map[string]float64{}
	for _, raw := range raws {
		var rec Record
		if err := json.Unmarshal(raw, &rec); err != nil || !want[rec.Cluster.ID] {
			continue
		}
		plan, err := ranchercluster.UnmarshalPlan(rec.Plan)
		if err != nil {
			m.log.WarnContext(ctx, "unreadable cluster plan; no usage reported", "cluster", rec.Cluster.ID, "err", err)
			continue
		}
		u, err := m.measure(ctx, &rec, plan)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			m.log.WarnContext(ctx, "reading a cluster's usage failed; the next cycle retries", "cluster", rec.Cluster.ID, "err", err)
			continue
		}
		out[rec.Cluster.ID] = map[string]float64{
			ComponentNodes:   float64(u.Nodes),
			ComponentCPU:     float64(u.VCPUs),
			ComponentRAM:     float64(u.RAMMB) / 1024,
			ComponentStorage: float64(u.StorageGB),
		}
	}
	return out, nil
}

// usageZone is a Zone that can sum its owner's servers (*openstack.Client).
type usageZone interface {
	Usage(ctx context.Context, owner openstack.Owner) (openstack.Usage, error)
}

// place is one zone and project the cluster has VMs in (an empty Project:
// the zone credentials' own, self-managed mode).
type place struct {
	offering string
	project  openstack.Project
}

// places are the zones and projects of a cluster: each managed tenant's
// project, and the zones of its self-managed nodes.
func places(rec *Record, plan *ranchercluster.Plan) []place {
	var out []place
	add := func(p place) {
		if !slices.ContainsFunc(out, func(q place) bool { return q.offering == p.offering && q.project.ID == p.project.ID }) {
			out = append(out, p)
		}
	}
	for _, t := range rec.Tenants {
		add(place{offering: t.OfferingUUID, project: t.Project})
	}
	for _, n := range rec.Nodes {
		if n.ProjectID == "" {
			add(place{offering: n.OfferingUUID})
		}
	}
	if len(plan.Tenants) == 0 {
		for _, n := range plan.Nodes {
			add(place{offering: n.OfferingUUID})
		}
	}
	return out
}

func (m *UsageMeter) measure(ctx context.Context, rec *Record, plan *ranchercluster.Plan) (openstack.Usage, error) {
	owner := openstack.Owner(plan.ResourceUUID)
	var sum openstack.Usage
	for _, p := range places(rec, plan) {
		az, ok := m.settings.Offering(p.offering)
		if !ok {
			return sum, fmt.Errorf("availability zone %s is no longer in openstack_offering_uuid_list", p.offering)
		}
		z, err := m.cloud.Connect(ctx, az)
		if err != nil {
			return sum, fmt.Errorf("zone %s: %w", az.Label(), err)
		}
		if p.project.ID != "" {
			if z, err = m.cloud.Scoped(ctx, z, p.project); err != nil {
				return sum, fmt.Errorf("zone %s, project %s: %w", az.Label(), p.project.Name, err)
			}
		}
		uz, ok := z.(usageZone)
		if !ok {
			return sum, fmt.Errorf("zone %s: %T cannot read usage", az.Label(), z)
		}
		u, err := uz.Usage(ctx, owner)
		if err != nil {
			return sum, fmt.Errorf("zone %s: %w", az.Label(), err)
		}
		sum = sum.Add(u)
	}
	return sum, nil
}

// kvRecords reads PlanBucket without creating it: a usage reporter that
// runs before any cluster was made finds no records.
type kvRecords struct {
	js jetstream.JetStream
	mu sync.Mutex
	kv jetstream.KeyValue
}

func (r *kvRecords) all(ctx context.Context) ([][]byte, error) {
	r.mu.Lock()
	kv := r.kv
	r.mu.Unlock()
	if kv == nil {
		var err error
		kv, err = bus.OpenKeyValue(ctx, r.js, PlanBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.kv = kv
		r.mu.Unlock()
	}
	keys, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // terminated meanwhile
		}
		if err != nil {
			_ = keys.Stop()
			return nil, err
		}
		out = append(out, e.Value())
	}
	return out, nil
}
