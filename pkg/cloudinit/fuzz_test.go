package cloudinit_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzRender renders a node's user_data from any template an operator may
// write (Python str.format rules) and any data volume an order may ask for
// (its mount point and filesystem are typed by the order's author), with
// any registration token and Vault credentials a peer may hand back.
//
// Properties:
//   - a refusal is fault.Invalid (a template or order no retry fixes);
//   - with the default template, the order's values never change the
//     document's shape: the rendered cloud-config has the same top-level
//     keys as with a plain /data ext4 volume, and its mounts and fs_setup
//     hold the order's mount point and filesystem back exactly as given
//     (escaped by the YAML encoder, never spliced in as text);
//   - a token or Vault credential that goes into the install script
//     holds no quote, $, backslash, blank or line break;
//   - whatever renders with data volumes is a #cloud-config mapping.
func FuzzRender(f *testing.F) {
	f.Add("", "/opt/rke2_storage", "btrfs", "abcdef0123456789", false)
	f.Add("", "/opt/longhorn_storage", "ext4", "tok", true)
	f.Add("", "/a: b\nruncmd: [reboot]", "ext4\n- evil", "t", false)
	f.Add("", "/x #comment", "xfs", "a\"b", true)
	f.Add("#cloud-config\nruncmd:\n  - echo {rke_role} {{literal}}\n", "/data", "", "x", false)
	f.Add("#!/bin/sh\necho {registration_token}\n", "", "", "tok$(id)", false)
	f.Add("{0}{x!r}{rancher_url:>8}", "/d", "", "t", true)
	f.Fuzz(func(t *testing.T, template, mount, fs, token string, withVault bool) {
		s := cloudinit.Settings{RancherURL: "https://rancher.site.example"}
		if template != "" {
			tpl, err := cloudinit.ParseTemplate(template, "fuzz")
			if err != nil {
				refusal(t, err)
				return
			}
			s.Template = tpl
		}
		node := cloudinit.Node{Role: cloudinit.Agent, Volumes: []cloudinit.Volume{{MountPoint: mount, Filesystem: fs}}, RegistrationToken: token}
		if withVault {
			node.Vault = &cloudinit.VaultCredentials{Addr: "https://vault.site.example:8200", SecretPath: "secret/rancher/cluster-x", RoleID: token, SecretID: "s"}
		}
		out, err := cloudinit.Render(s, node)
		if err != nil {
			refusal(t, err)
			return
		}
		if strings.ContainsAny(token, "\n\r\"'`$\\ ") {
			t.Fatalf("token %q with script characters was rendered", token)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(out, &doc); err != nil || !strings.HasPrefix(string(out), "#cloud-config\n") {
			t.Fatalf("user_data with a data volume is no cloud-config mapping (%v):\n%s", err, out)
		}
		if template != "" {
			return
		}
		plain := node
		plain.Volumes = []cloudinit.Volume{{MountPoint: "/data", Filesystem: "ext4"}}
		want, err := cloudinit.Render(s, plain)
		if err != nil {
			t.Fatal(err)
		}
		var wantDoc map[string]any
		if err := yaml.Unmarshal(want, &wantDoc); err != nil {
			t.Fatal(err)
		}
		if k, wk := keys(doc), keys(wantDoc); !slices.Equal(k, wk) {
			t.Fatalf("volume (%q, %q) changed the document's keys: %v, not %v", mount, fs, k, wk)
		}
		var got struct {
			Mounts  [][]string          `yaml:"mounts"`
			FSSetup []map[string]string `yaml:"fs_setup"`
		}
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		wantFS := fs
		if wantFS == "" {
			wantFS = "ext4"
		}
		if len(got.FSSetup) != 1 || got.FSSetup[0]["filesystem"] != wantFS {
			t.Fatalf("fs_setup %v does not hold filesystem %q exactly", got.FSSetup, wantFS)
		}
		if mount == "" {
			if len(got.Mounts) != 0 {
				t.Fatalf("mounts %v for a volume without mount point", got.Mounts)
			}
		} else if len(got.Mounts) != 1 || len(got.Mounts[0]) != 2 || got.Mounts[0][1] != mount {
			t.Fatalf("mounts %q do not hold mount point %q exactly", got.Mounts, mount)
		}
	})
}

func refusal(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fault.Invalid) {
		t.Fatalf("refusal %v is not fault.Invalid", err)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
