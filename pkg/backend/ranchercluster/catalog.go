package ranchercluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Catalog looks up what a zone offers, for validation and planning. The
// saga implements it on OpenStack (with the zone's credentials); tests use
// a fake. Its errors are not the order's fault: they are passed on as they
// are, for the caller to retry.
type Catalog interface {
	Flavors(ctx context.Context, az AZ) ([]Flavor, error)
	VolumeTypes(ctx context.Context, az AZ) ([]VolumeType, error)
	// Subnet finds a subnet the zone's credentials may put VMs on (their
	// project's, or on a shared network); false when there is none.
	Subnet(ctx context.Context, az AZ, id string) (Subnet, bool, error)
	// SecurityGroups lists the groups of the zone credentials' project.
	SecurityGroups(ctx context.Context, az AZ) ([]SecurityGroup, error)
	// SubnetReaches reports whether a router connects the subnet to the
	// external network (Neutron gives a port on the subnet a floating IP
	// from that network only then).
	SubnetReaches(ctx context.Context, az AZ, subnetID, externalNetworkID string) (bool, error)
}

// zone is a selected zone with what its catalog listed.
type zone struct {
	az      AZ
	flavors []Flavor
	types   []VolumeType
}

func lookup(ctx context.Context, cat Catalog, az AZ, types bool) (zone, error) {
	z := zone{az: az}
	var err error
	if z.flavors, err = cat.Flavors(ctx, az); err != nil {
		return z, fmt.Errorf("listing the flavors of %s: %w", az.Label(), err)
	}
	if types {
		if z.types, err = cat.VolumeTypes(ctx, az); err != nil {
			return z, fmt.Errorf("listing the volume types of %s: %w", az.Label(), err)
		}
	}
	return z, nil
}

// flavor finds a flavor by name, else by id (an order may give either).
func (z zone) flavor(nameOrID string) (Flavor, bool) {
	if i := slices.IndexFunc(z.flavors, func(f Flavor) bool { return f.Name == nameOrID }); i >= 0 {
		return z.flavors[i], true
	}
	if i := slices.IndexFunc(z.flavors, func(f Flavor) bool { return f.ID == nameOrID }); i >= 0 {
		return z.flavors[i], true
	}
	return Flavor{}, false
}

// smallestFlavor is Mastermind's pick for a node given by cpu and memory:
// the flavor with the fewest cores, then the least RAM, that has enough.
func (z zone) smallestFlavor(cpu, ramMB int) (Flavor, bool) {
	var best Flavor
	found := false
	for _, f := range z.flavors {
		if f.VCPUs < cpu || f.RAMMB < ramMB {
			continue
		}
		if !found || f.VCPUs < best.VCPUs || (f.VCPUs == best.VCPUs && (f.RAMMB < best.RAMMB ||
			(f.RAMMB == best.RAMMB && f.Name < best.Name))) {
			best, found = f, true
		}
	}
	return best, found
}

// volumeType finds a volume type by name, else by id; its name is what
// plans and quotas use.
func (z zone) volumeType(nameOrID string) (VolumeType, bool) {
	if i := slices.IndexFunc(z.types, func(t VolumeType) bool { return t.Name == nameOrID }); i >= 0 {
		return z.types[i], true
	}
	if i := slices.IndexFunc(z.types, func(t VolumeType) bool { return t.ID == nameOrID }); i >= 0 {
		return z.types[i], true
	}
	return VolumeType{}, false
}

func flavorRef(f Flavor) FlavorRef {
	return FlavorRef{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAMMB: f.RAMMB}
}

// joinAttr joins problems into one error, nil when there are none.
func joinAttr(errs []error) error { return errors.Join(errs...) }
