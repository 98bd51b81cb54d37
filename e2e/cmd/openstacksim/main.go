// Command openstacksim serves the OpenStack simulator (see package
// openstacksim) for local runs: Keystone, Nova, Neutron, Cinder and Glance
// on one port, the inspection API under /sim/.
//
//	openstacksim -listen 127.0.0.1:5000 -azs az-a,az-b,az-c -volume-types __DEFAULT__,ssd
//	# auth_url: http://127.0.0.1:5000/identity/v3, user admin / sim-admin-password, project admin
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "openstacksim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:5000", "address to serve the APIs on (plain HTTP)")
	region := flag.String("region", openstacksim.DefaultRegion, "region in the catalog")
	adminUser := flag.String("admin-user", openstacksim.DefaultAdminUser, "admin user name")
	adminPassword := flag.String("admin-password", openstacksim.DefaultAdminPassword, "admin password")
	adminProject := flag.String("admin-project", openstacksim.DefaultAdminProject, "admin project name")
	azs := flag.String("azs", "nova", "availability zones, comma-separated")
	flavors := flag.String("flavors", "", "flavors as id:name:vcpus:ram_mib:disk_gib, comma-separated (default: m1.small, m1.medium, m1.large)")
	images := flag.String("images", "", "image names, comma-separated (default: ubuntu-22.04)")
	volumeTypes := flag.String("volume-types", "", "volume type names, comma-separated, the first the default (default: __DEFAULT__)")
	extCIDR := flag.String("external-cidr", "172.24.4.0/24", "CIDR of the external network")
	buildPolls := flag.Int("build-polls", openstacksim.DefaultBuildPolls, "GETs a server answers BUILD before it boots (negative: none)")
	volumePolls := flag.Int("volume-polls", openstacksim.DefaultVolumePolls, "GETs a volume answers creating (negative: none)")
	deletePolls := flag.Int("delete-polls", openstacksim.DefaultDeletePolls, "API requests a deleted server is still seen, deleting (negative: none)")
	dhcpPorts := flag.Bool("dhcp-ports", false, "give networks a DHCP port that takes a pool address, as a real cloud does")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := openstacksim.Options{
		Region: *region, AdminUser: *adminUser, AdminPassword: *adminPassword, AdminProject: *adminProject,
		AvailabilityZones: split(*azs), ExternalNetwork: openstacksim.ExternalNetwork{CIDR: *extCIDR},
		BuildPolls: *buildPolls, VolumePolls: *volumePolls, DeletePolls: *deletePolls, DHCPPorts: *dhcpPorts, Logger: log,
	}
	for _, f := range split(*flavors) {
		fl, err := parseFlavor(f)
		if err != nil {
			return err
		}
		opts.Flavors = append(opts.Flavors, fl)
	}
	for _, name := range split(*images) {
		opts.Images = append(opts.Images, openstacksim.Image{Name: name})
	}
	for _, name := range split(*volumeTypes) {
		opts.VolumeTypes = append(opts.VolumeTypes, openstacksim.VolumeType{Name: name})
	}
	// Zero means the default in Options; the flags' 0 means "no polls".
	if opts.BuildPolls == 0 {
		opts.BuildPolls = -1
	}
	if opts.VolumePolls == 0 {
		opts.VolumePolls = -1
	}
	if opts.DeletePolls == 0 {
		opts.DeletePolls = -1
	}
	srv, err := openstacksim.New(opts)
	if err != nil {
		return err
	}
	if err := srv.Start(*listen); err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	log.Info("openstacksim listening", "auth_url", srv.AuthURL(), "admin", *adminUser, "project", *adminProject,
		"external_network", srv.ExternalNetworkID(), "inventory", srv.URL()+"/sim/inventory")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseFlavor(s string) (openstacksim.Flavor, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 5 {
		return openstacksim.Flavor{}, fmt.Errorf("flavor %q: want id:name:vcpus:ram_mib:disk_gib", s)
	}
	var n [3]int
	for i, p := range parts[2:] {
		v, err := strconv.Atoi(p)
		if err != nil {
			return openstacksim.Flavor{}, fmt.Errorf("flavor %q: %w", s, err)
		}
		n[i] = v
	}
	return openstacksim.Flavor{ID: parts[0], Name: parts[1], VCPUs: n[0], RAM: n[1], Disk: n[2]}, nil
}
