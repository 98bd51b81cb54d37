// Command openstacksim serves the OpenStack simulator (see package
// openstacksim) for local runs: Keystone, Nova, Neutron, Cinder and Glance
// on one port.
//
//	openstacksim -listen 127.0.0.1:5000 -azs az-a,az-b,az-c -volume-types __DEFAULT__,ssd
//	# auth_url: http://127.0.0.1:5000/identity/v3, user admin / sim-admin-password, project admin
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/simkit"
)

func main() {
	simkit.Main("openstacksim", "127.0.0.1:5000", func(fs *flag.FlagSet) simkit.Build {
		region := fs.String("region", openstacksim.DefaultRegion, "region in the catalog")
		adminUser := fs.String("admin-user", openstacksim.DefaultAdminUser, "admin user name")
		adminPassword := fs.String("admin-password", openstacksim.DefaultAdminPassword, "admin password")
		adminProject := fs.String("admin-project", openstacksim.DefaultAdminProject, "admin project name")
		azs := fs.String("azs", "nova", "availability zones, comma-separated")
		flavors := fs.String("flavors", "", "flavors as id:name:vcpus:ram_mib:disk_gib, comma-separated (default: m1.small, m1.medium, m1.large)")
		images := fs.String("images", "", "image names, comma-separated (default: ubuntu-22.04)")
		volumeTypes := fs.String("volume-types", "", "volume type names, comma-separated, the first the default (default: __DEFAULT__)")
		extCIDR := fs.String("external-cidr", "172.24.4.0/24", "CIDR of the external network")
		buildPolls := fs.Int("build-polls", openstacksim.DefaultBuildPolls, "GETs a server answers BUILD before it boots (negative: none)")
		volumePolls := fs.Int("volume-polls", openstacksim.DefaultVolumePolls, "GETs a volume answers creating (negative: none)")
		deletePolls := fs.Int("delete-polls", openstacksim.DefaultDeletePolls, "API requests a deleted server is still seen, deleting (negative: none)")
		return func(_ context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
			opts := openstacksim.Options{
				Region: *region, AdminUser: *adminUser, AdminPassword: *adminPassword, AdminProject: *adminProject,
				AvailabilityZones: split(*azs), ExternalNetwork: openstacksim.ExternalNetwork{CIDR: *extCIDR},
				// Zero means the default in Options; the flags' 0 means "no
				// polls", which is -1 there.
				BuildPolls: cmp.Or(*buildPolls, -1), VolumePolls: cmp.Or(*volumePolls, -1), DeletePolls: cmp.Or(*deletePolls, -1),
				Logger: log,
			}
			for _, f := range split(*flavors) {
				fl, err := parseFlavor(f)
				if err != nil {
					return nil, nil, err
				}
				opts.Flavors = append(opts.Flavors, fl)
			}
			opts.Images = simkit.Map(split(*images), func(n string) openstacksim.Image { return openstacksim.Image{Name: n} })
			opts.VolumeTypes = simkit.Map(split(*volumeTypes), func(n string) openstacksim.VolumeType { return openstacksim.VolumeType{Name: n} })
			srv, err := openstacksim.New(opts)
			if err != nil {
				return nil, nil, err
			}
			return srv, []any{"auth_url", srv.AuthURL(), "admin_user", *adminUser, "project", *adminProject,
				"external_network", srv.ExternalNetworkID()}, nil
		}
	})
}

// split is a flag's comma-separated names, trimmed, the empty ones left out.
func split(s string) []string {
	return slices.DeleteFunc(simkit.Map(strings.Split(s, ","), strings.TrimSpace), func(p string) bool { return p == "" })
}

func parseFlavor(s string) (openstacksim.Flavor, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 5 {
		return openstacksim.Flavor{}, fmt.Errorf("flavor %q: want id:name:vcpus:ram_mib:disk_gib", s)
	}
	f := openstacksim.Flavor{ID: parts[0], Name: parts[1]}
	if _, err := fmt.Sscan(strings.Join(parts[2:], " "), &f.VCPUs, &f.RAM, &f.Disk); err != nil {
		return openstacksim.Flavor{}, fmt.Errorf("flavor %q: %w", s, err)
	}
	return f, nil
}
