package openstack_test

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestSubnetReachesIsARouterToTheExternalNetwork: a floating IP from the
// external network can go to a port on a subnet only when a router with
// an interface there has its gateway on that network.
func TestSubnetReachesIsARouterToTheExternalNetwork(t *testing.T) {
	ctx, _, p, b := oneZoneBuilt(t)
	owner := openstack.Owner(resourceUUID)
	ext := p.Tenants[0].Router.ExternalNetworkID
	lone := ensured(b.scoped.EnsureSubnet(ctx, owner, b.network.ID, ranchercluster.SubnetPlan{Name: "lone-sub", CIDR: "10.77.0.0/24",
		IPVersion: 4})).of(t)
	tests := map[string]struct {
		subnet, network string
		want            bool
	}{
		"the tenant's subnet, routed":              {b.subnet.ID, ext, true},
		"a subnet no router has an interface on":   {lone.ID, ext, false},
		"the routed subnet, another network asked": {b.subnet.ID, "00000000-0000-4000-8000-0000000000ee", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := b.admin.SubnetReaches(ctx, tc.subnet, tc.network)
			if err != nil || got != tc.want {
				t.Fatalf("SubnetReaches(%s, %s) = %v, %v; want %v", tc.subnet, tc.network, got, err, tc.want)
			}
		})
	}
}

// TestOwnedGroupsAndFloatingIPsAreTheOwnersOnly: the cluster pass's lists
// hold the owner's groups (with their rules, a deleted one missing) and
// floating IPs, nobody else's.
func TestOwnedGroupsAndFloatingIPsAreTheOwnersOnly(t *testing.T) {
	ctx, sim, p, b := oneZoneBuilt(t)
	owner := openstack.Owner(resourceUUID)
	_, _, network := rawAdmin(t, sim)
	var plan ranchercluster.SecurityGroupPlan
	for _, g := range p.Tenants[0].SecurityGroups {
		if len(g.Rules) > 0 {
			plan = g
		}
	}
	made := b.groups[plan.Name]
	// The group's first planned rule (Neutron gave it egress rules too).
	var gone openstack.Rule
	for _, r := range made.Rules {
		if len((openstack.SecurityGroup{Rules: []openstack.Rule{r}}).MissingRules(plan.Rules[:1])) == 0 {
			gone = r
		}
	}
	if err := rules.Delete(ctx, network, gone.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	theirs, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: p.Tenants[0].Router.ExternalNetworkID,
		ProjectID: b.project.ID, Description: "someone's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	groups, err := b.scoped.OwnedSecurityGroups(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != len(b.groups) {
		t.Errorf("owned groups %v, want the %d made (not the project's default)", groups, len(b.groups))
	}
	if missing := groups[made.ID].MissingRules(plan.Rules); len(missing) != 1 || missing[0] != plan.Rules[0] {
		t.Errorf("missing rules of %s: %+v, want the deleted %+v", plan.Name, missing, plan.Rules[0])
	}
	fips, err := b.scoped.OwnedFloatingIPs(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fips[theirs.ID]; ok || len(fips) != len(b.fips) {
		t.Errorf("owned floating IPs %v, want the %d made and not someone's %s", fips, len(b.fips), theirs.ID)
	}
	if g, _ := b.scoped.OwnedSecurityGroups(ctx, "someone-else"); len(g) != 0 {
		t.Errorf("another owner's groups: %v", g)
	}
}
