package openstacksim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
)

// TestReadsFollowEachServicesVisibility checks what another project's
// member, the owner's member and the admin see of Neutron's and
// Keystone's resources, by id and in lists, with each service's answer to
// what may not be seen: Neutron hides it (404), Keystone forbids it (403).
func TestReadsFollowEachServicesVisibility(t *testing.T) {
	sim, pa, a := simWithTenant(t, "owner")
	pb, b := tenant(t, sim, "other")
	ctx := ctxT(t)
	net := must(networks.Create(ctx, a.network, networks.CreateOpts{Name: "owner-net"}).Extract()).of(t)
	rt := must(routers.Create(ctx, a.network, routers.CreateOpts{Name: "owner-router"}).Extract()).of(t)
	ac := clientsOf(t, admin(t, sim))
	ext := sim.ExternalNetworkID()

	for _, tc := range []struct {
		name string
		as   *gophercloud.ProviderClient
		path string
		// status is the one status the call may answer.
		status int
		// want is in the body: a JSON path of an error's field and a part
		// of its text, or a list's key and the ids it holds (ids it must
		// not hold prefixed with "!").
		want  string
		parts []string
	}{
		{"another project's network is not found", b.provider, "/network/v2.0/networks/" + net.ID, 404,
			"NeutronError.type", []string{"NetworkNotFound"}},
		{"another project's router is not found", b.provider, "/network/v2.0/routers/" + rt.ID, 404,
			"NeutronError.message", []string{"Router " + rt.ID + " could not be found."}},
		{"the owner's member sees its router", a.provider, "/network/v2.0/routers/" + rt.ID, 200,
			"router.id", []string{rt.ID}},
		{"the admin sees every project's router", ac.provider, "/network/v2.0/routers/" + rt.ID, 200,
			"router.id", []string{rt.ID}},
		{"the external network is everyone's", b.provider, "/network/v2.0/networks/" + ext, 200,
			"network.id", []string{ext}},
		{"a list holds the external network, not another project's", b.provider, "/network/v2.0/networks", 200,
			"networks", []string{ext, "!" + net.ID}},
		{"a list filters by a field", a.provider, "/network/v2.0/networks?name=owner-net", 200,
			"networks", []string{net.ID, "!" + ext}},
		{"a marker of an unseen object is a neutron 400", b.provider, "/network/v2.0/networks?marker=" + net.ID, 400,
			"NeutronError.message", []string{"marker [" + net.ID + "] not found"}},
		{"another project is forbidden", b.provider, "/identity/v3/projects/" + pa.ID, 403,
			"error.message", []string{"identity:get_project"}},
		{"an unknown project is not found", b.provider, "/identity/v3/projects/nope", 404,
			"error.message", []string{"Could not find project: nope."}},
		{"a member sees its own project", b.provider, "/identity/v3/projects/" + pb.ID, 200,
			"project.id", []string{pb.ID}},
		{"only an admin lists projects", b.provider, "/identity/v3/projects", 403,
			"error.message", []string{"identity:list_projects"}},
		{"only an admin lists users", b.provider, "/identity/v3/users", 403,
			"error.message", []string{"identity:list_users"}},
		{"the admin lists projects", ac.provider, "/identity/v3/projects?name=owner", 200,
			"projects", []string{pa.ID, "!" + pb.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.as.Request(ctxT(t), http.MethodGet, sim.URL()+tc.path,
				&gophercloud.RequestOpts{OkCodes: []int{tc.status}, KeepResponseBody: true})
			if err != nil {
				t.Fatalf("want HTTP %d: %v", tc.status, err)
			}
			defer func() { _ = resp.Body.Close() }()
			raw, _ := io.ReadAll(resp.Body)
			var body map[string]json.RawMessage
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			outer, inner, one := strings.Cut(tc.want, ".")
			if one {
				var o map[string]any
				_ = json.Unmarshal(body[outer], &o)
				got, _ := o[inner].(string)
				for _, p := range tc.parts {
					if !strings.Contains(got, p) {
						t.Fatalf("%s = %q, want it to hold %q (%s)", tc.want, got, p, raw)
					}
				}
				return
			}
			var list []struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(body[outer], &list); err != nil {
				t.Fatalf("%s: %v: %s", outer, err, raw)
			}
			ids := map[string]bool{}
			for _, o := range list {
				ids[o.ID] = true
			}
			for _, p := range tc.parts {
				if absent, ok := strings.CutPrefix(p, "!"); ok {
					if ids[absent] {
						t.Errorf("%s holds %s: %s", outer, absent, raw)
					}
				} else if !ids[p] {
					t.Errorf("%s lacks %s: %s", outer, p, raw)
				}
			}
		})
	}
}
