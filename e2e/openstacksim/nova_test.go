package openstacksim_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// boots records OnBoot calls.
type boots struct {
	mu    sync.Mutex
	seen  []openstacksim.Instance
	fail  map[string]error // by server name
	calls map[string]int
}

func (b *boots) hook(_ context.Context, srv openstacksim.Instance) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, srv)
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	b.calls[srv.ID]++
	return b.fail[srv.Name]
}

func (b *boots) count(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[id]
}

func imageID(t *testing.T, c clients, name string) string {
	t.Helper()
	page := must(images.List(c.image, images.ListOpts{Name: name}).AllPages(ctxT(t))).of(t)
	imgs := must(images.ExtractImages(page)).of(t)
	if len(imgs) != 1 {
		t.Fatalf("images named %s: %+v", name, imgs)
	}
	return imgs[0].ID
}

// TestServerLifecycle is a node as the cluster-provisioner makes it: a data
// volume, a port at a fixed address, a server booting from an image volume
// with both attached and cloud-init in user_data; then it is deleted and
// nothing is left.
func TestServerLifecycle(t *testing.T) {
	b := &boots{}
	sim := openstacksim.NewTestServer(t, openstacksim.Options{
		BuildPolls: 1, AvailabilityZones: []string{"az-a", "az-b"}, OnBoot: b.hook,
		VolumeTypes: []openstacksim.VolumeType{{Name: "__DEFAULT__"}, {Name: "ssd"}},
	})
	proj, c := tenant(t, sim, "life")
	ctx := ctxT(t)
	n, sub := tenantNet(t, c)
	sg := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: "k8s_admin"}).Extract()).of(t)
	port := must(ports.Create(ctx, c.network, ports.CreateOpts{NetworkID: n.ID, Name: "node-port",
		FixedIPs: []ports.IP{{SubnetID: sub.ID, IPAddress: "192.168.42.10"}}, SecurityGroups: &[]string{sg.ID}}).Extract()).of(t)

	data := must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "rke2-data", Size: 20, VolumeType: "ssd",
		AvailabilityZone: "az-b"}, nil).Extract()).of(t)
	if data.Status != "creating" {
		t.Fatalf("new volume %s", data.Status)
	}
	if err := volumes.WaitForStatus(ctx, c.volume, data.ID, "available"); err != nil {
		t.Fatal(err)
	}

	userData := "#cloud-config\nruncmd:\n  - echo role-id secret-id\n"
	created := must(servers.Create(ctx, c.compute, servers.CreateOpts{
		Name: "k8s-node-1", FlavorRef: "2", AvailabilityZone: "az-b", UserData: []byte(userData),
		Networks: []servers.Network{{Port: port.ID}}, Metadata: map[string]string{"cluster": "c1"},
		BlockDevice: []servers.BlockDevice{
			{BootIndex: 0, SourceType: servers.SourceImage, DestinationType: servers.DestinationVolume,
				UUID: imageID(t, c, "ubuntu-22.04"), VolumeSize: 30, DeleteOnTermination: true},
			{BootIndex: -1, SourceType: servers.SourceVolume, DestinationType: servers.DestinationVolume, UUID: data.ID},
		},
	}, nil).Extract()).of(t)

	first := must(servers.Get(ctx, c.compute, created.ID).Extract()).of(t)
	if first.Status != "BUILD" || b.count(created.ID) != 0 {
		t.Fatalf("first poll: %s, %d boots", first.Status, b.count(created.ID))
	}
	if err := servers.WaitForStatus(ctx, c.compute, created.ID, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	srv := must(servers.Get(ctx, c.compute, created.ID).Extract()).of(t)

	t.Run("addresses come from the port", func(t *testing.T) {
		addrs, _ := srv.Addresses["int-net"].([]any)
		if len(addrs) != 1 || addrs[0].(map[string]any)["addr"] != "192.168.42.10" {
			t.Fatalf("addresses %+v", srv.Addresses)
		}
		if srv.AvailabilityZone != "az-b" || srv.TenantID != proj.ID || srv.Metadata["cluster"] != "c1" {
			t.Fatalf("server %+v", srv)
		}
		if len(srv.SecurityGroups) != 1 || srv.SecurityGroups[0]["name"] != "k8s_admin" {
			t.Fatalf("security groups %+v", srv.SecurityGroups)
		}
	})
	t.Run("OnBoot ran once with the decoded user_data and the volumes", func(t *testing.T) {
		if _, err := servers.Get(ctx, c.compute, created.ID).Extract(); err != nil {
			t.Fatal(err)
		}
		if got := b.count(created.ID); got != 1 {
			t.Fatalf("OnBoot ran %d times", got)
		}
		seen := b.seen[0]
		if string(seen.UserData) != userData || seen.Name != "k8s-node-1" || seen.AvailabilityZone != "az-b" ||
			len(seen.FixedIPs) != 1 || seen.FixedIPs[0] != "192.168.42.10" || len(seen.Volumes) != 2 {
			t.Fatalf("OnBoot saw %+v", seen)
		}
	})
	t.Run("both volumes are in use, the boot volume first", func(t *testing.T) {
		atts := must(servers.Get(ctx, c.compute, created.ID).Extract()).of(t).AttachedVolumes
		if len(atts) != 2 || atts[0].ID != b.seen[0].Volumes[0] || atts[1].ID != data.ID {
			t.Fatalf("attachments %+v", atts)
		}
		v := must(volumes.Get(ctx, c.volume, data.ID).Extract()).of(t)
		if v.Status != "in-use" || len(v.Attachments) != 1 || v.Attachments[0].ServerID != created.ID || v.Attachments[0].Device != "/dev/vdb" {
			t.Fatalf("data volume %+v", v)
		}
		err := volumes.Delete(ctx, c.volume, data.ID, volumes.DeleteOpts{}).ExtractErr()
		wantCode(t, err, http.StatusBadRequest)
	})
	t.Run("the port is bound and cannot boot a second server", func(t *testing.T) {
		p := must(ports.Get(ctx, c.network, port.ID).Extract()).of(t)
		if p.DeviceID != created.ID || !strings.HasPrefix(p.DeviceOwner, "compute:") {
			t.Fatalf("port %+v", p)
		}
		_, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "other", FlavorRef: "1",
			ImageRef: imageID(t, c, "ubuntu-22.04"), Networks: []servers.Network{{Port: port.ID}}}, nil).Extract()
		wantCode(t, err, http.StatusConflict)
	})
	t.Run("a server being deleted keeps its volumes for one more call", func(t *testing.T) {
		if err := servers.Delete(ctx, c.compute, created.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		v := must(volumes.Get(ctx, c.volume, data.ID).Extract()).of(t)
		if v.Status != "in-use" {
			t.Fatalf("data volume %s while its server is deleting", v.Status)
		}
		_, err := servers.Get(ctx, c.compute, created.ID).Extract()
		wantCode(t, err, http.StatusNotFound)
	})
	t.Run("then the boot volume is deleted, the data volume detached, the port unbound", func(t *testing.T) {
		inv := sim.Inventory(proj.ID)
		if len(inv.Volumes) != 1 || inv.Volumes[0].ID != data.ID || inv.Volumes[0].Status != "available" {
			t.Fatalf("volumes %+v", inv.Volumes)
		}
		if len(inv.Ports) != 1 || inv.Ports[0].DeviceID != "" {
			t.Fatalf("ports %+v", inv.Ports)
		}
	})
}

func TestServerNetworkByUUIDMakesAndDeletesItsPort(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1})
	proj, c := tenant(t, sim, "uuid")
	ctx := ctxT(t)
	n, _ := tenantNet(t, c)
	srv := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "w", FlavorRef: "1",
		ImageRef: imageID(t, c, "ubuntu-22.04"), Networks: []servers.Network{{UUID: n.ID}}}, nil).Extract()).of(t)
	if err := servers.WaitForStatus(ctx, c.compute, srv.ID, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	inv := sim.Inventory(proj.ID)
	if len(inv.Ports) != 1 || inv.Ports[0].FixedIPs[0].IPAddress != "192.168.42.10" || inv.Ports[0].DeviceID != srv.ID {
		t.Fatalf("ports %+v", inv.Ports)
	}
	if !sim.RemoveServer(srv.ID) {
		t.Fatal("no server to remove")
	}
	if inv := sim.Inventory(proj.ID); len(inv.Ports) != 0 || len(inv.Servers) != 0 {
		t.Fatalf("left behind %+v", inv)
	}
}

func TestServerErrors(t *testing.T) {
	b := &boots{fail: map[string]error{"bad-cloud-init": errors.New("vault login: invalid secret id")}}
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, OnBoot: b.hook,
		AvailabilityZones: []string{"az-a", "az-b"}})
	_, c := tenant(t, sim, "errs")
	ctx := ctxT(t)
	n, _ := tenantNet(t, c)
	img := imageID(t, c, "ubuntu-22.04")
	sim.FailServers(openstacksim.ServerErrorRule{Name: "b-2"})

	boot := func(name, az string) *servers.Server {
		s := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: name, FlavorRef: "1", ImageRef: img,
			AvailabilityZone: az, Networks: []servers.Network{{UUID: n.ID}}}, nil).Extract()).of(t)
		return must(servers.Get(ctx, c.compute, s.ID).Extract()).of(t)
	}
	for _, tc := range []struct {
		name, az, status, fault string
	}{
		{"a-1", "az-a", "ACTIVE", ""},
		{"b-1", "az-b", "ACTIVE", ""},
		{"a-2", "az-a", "ACTIVE", ""},
		{"b-2", "az-b", "ERROR", openstacksim.DefaultBootFault},
		{"b-3", "az-b", "ACTIVE", ""},
		{"bad-cloud-init", "az-a", "ERROR", "vault login: invalid secret id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := boot(tc.name, tc.az)
			if s.Status != tc.status || s.Fault.Message != tc.fault {
				t.Fatalf("%s: status %s fault %q", tc.name, s.Status, s.Fault.Message)
			}
		})
	}
	t.Run("the rule-picked server never ran its cloud-init", func(t *testing.T) {
		for _, s := range b.seen {
			if s.Name == "b-2" {
				t.Fatal("OnBoot ran for b-2")
			}
		}
	})
}

func TestComputeAndVolumeQuotas(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, VolumePolls: -1,
		VolumeTypes: []openstacksim.VolumeType{{Name: "__DEFAULT__"}, {Name: "ssd"}}})
	proj, c := tenant(t, sim, "q")
	ctx := ctxT(t)
	img := imageID(t, c, "ubuntu-22.04")
	sim.SetQuota(proj.ID, "gigabytes_ssd", 30)
	sim.SetQuota(proj.ID, "cores", 3)

	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		body   string
	}{
		{"volume within the type's gigabytes", func() error {
			_, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 20, VolumeType: "ssd"}, nil).Extract()
			return err
		}, 0, ""},
		{"volume over the type's gigabytes is 413", func() error {
			_, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 20, VolumeType: "ssd"}, nil).Extract()
			return err
		}, http.StatusRequestEntityTooLarge, `"overLimit"`},
		{"the default type is not limited by gigabytes_ssd", func() error {
			_, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 20}, nil).Extract()
			return err
		}, 0, ""},
		{"unknown volume type", func() error {
			_, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 1, VolumeType: "gold"}, nil).Extract()
			return err
		}, http.StatusNotFound, "gold"},
		{"server within the cores", func() error {
			_, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "s1", FlavorRef: "2", ImageRef: img}, nil).Extract()
			return err
		}, 0, ""},
		{"server over the cores is 403", func() error {
			_, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "s2", FlavorRef: "2", ImageRef: img}, nil).Extract()
			return err
		}, http.StatusForbidden, "Quota exceeded for cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.status)
			if !strings.Contains(err.Error(), tc.body) {
				t.Fatalf("error %v lacks %s", err, tc.body)
			}
		})
	}
	t.Run("a boot volume over the quota fails the boot, not the request", func(t *testing.T) {
		sim.SetQuota(proj.ID, "cores", -1)
		s := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "s3", FlavorRef: "1", Networks: "none",
			BlockDevice: []servers.BlockDevice{{BootIndex: 0, SourceType: servers.SourceImage,
				DestinationType: servers.DestinationVolume, UUID: img, VolumeSize: 20, VolumeType: "ssd"}}}, nil).Extract()).of(t)
		got := must(servers.Get(ctx, c.compute, s.ID).Extract()).of(t)
		if got.Status != "ERROR" || !strings.Contains(got.Fault.Message, "VolumeSizeExceedsAvailableQuota") {
			t.Fatalf("server %s %q", got.Status, got.Fault.Message)
		}
	})
}

func TestDeletedServerIsDeletingForDeletePolls(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, DeletePolls: 2})
	_, c := tenant(t, sim, "deleting")
	ctx := ctxT(t)
	n, _ := tenantNet(t, c)
	sg := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: "k8s_admin"}).Extract()).of(t)
	s := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "w", FlavorRef: "1", ImageRef: imageID(t, c, "ubuntu-22.04"),
		Networks: []servers.Network{{UUID: n.ID}}, SecurityGroups: []string{"k8s_admin"}}, nil).Extract()).of(t)
	if err := servers.Delete(ctx, c.compute, s.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	got := must(servers.Get(ctx, c.compute, s.ID).Extract()).of(t)
	if got.TaskState != "deleting" {
		t.Fatalf("task state %q", got.TaskState)
	}
	err := groups.Delete(ctx, c.network, sg.ID).ExtractErr()
	wantCode(t, err, http.StatusConflict) // the server's port still holds it
	waitGone(t, c, s.ID)
	if err := groups.Delete(ctx, c.network, sg.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
}

func TestNovaReportsNeutronsRefusalAsItsOwn(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1})
	_, c := tenant(t, sim, "refused")
	ctx := ctxT(t)
	n, _ := tenantNet(t, c)
	opts := servers.CreateOpts{Name: "w", FlavorRef: "1", ImageRef: imageID(t, c, "ubuntu-22.04"),
		Networks: []servers.Network{{UUID: n.ID, FixedIP: "192.168.42.20"}}}
	must(servers.Create(ctx, c.compute, opts, nil).Extract()).of(t)
	_, err := servers.Create(ctx, c.compute, opts, nil).Extract()
	wantCode(t, err, http.StatusConflict)
	if !strings.Contains(err.Error(), `"conflictingRequest"`) || !strings.Contains(err.Error(), "IP address 192.168.42.20 already allocated") {
		t.Fatalf("error %v", err)
	}
}
