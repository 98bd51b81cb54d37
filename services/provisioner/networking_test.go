package provisioner

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// createdCluster runs a one-zone create on the fake world and returns the
// harness and a cluster pass over its record.
func createdCluster(t *testing.T) (*harness, *pass) {
	t.Helper()
	h := newHarness(t)
	if sg := h.run(t, ClusterCreate, "0000000000000000000000000000000a", attributes(1, 1)); sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	return h, &pass{offerings: map[string]*Offering{offeringHex: h.o}, records: h.plans, log: slog.New(slog.DiscardHandler),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "repairs"}, []string{"kind"})}
}

// record is the cluster's record as the pass left it.
func (h *harness) record(t *testing.T) Record {
	t.Helper()
	raw, _ := h.plans.Get(context.Background(), hexUUID(resourceUUID))
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestTheClusterPassRemakesOnlySitebusRulesAndFloatingIPs(t *testing.T) {
	foreignRule := ranchercluster.RulePlan{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 8080, PortRangeMax: 8080}
	tests := map[string]struct {
		// drift changes the world after the create, as someone at the
		// OpenStack API would; check looks at it after the pass.
		drift func(t *testing.T, w *world)
		// rules and fips are the repairs the pass counts of each kind.
		rules, fips float64
		// problem, when set, is part of the reason the resource is erred for.
		problem string
		check   func(t *testing.T, h *harness)
	}{
		"nothing missing repairs nothing": {
			drift: func(*testing.T, *world) {},
		},
		"a deleted rule is made again and a rule someone added is kept": {
			drift: func(t *testing.T, w *world) {
				g := groupNamed(t, w, "k8s_admin")
				g.rules = append(slices.DeleteFunc(g.rules, func(r ranchercluster.RulePlan) bool { return r.PortRangeMin == 6443 }), foreignRule)
			},
			rules: 1,
			check: func(t *testing.T, h *harness) {
				var ports []int
				for _, r := range groupNamed(t, h.w, "k8s_admin").rules {
					ports = append(ports, r.PortRangeMin)
				}
				slices.Sort(ports)
				if !slices.Equal(ports, []int{22, 6443, 8080}) {
					t.Errorf("k8s_admin opens %v, want 22 and 6443 back and the added 8080 kept", ports)
				}
			},
		},
		"a released floating IP is made again and the endpoints follow": {
			drift: func(t *testing.T, w *world) {
				for _, f := range w.byKind("floating-ip") {
					delete(w.objs, f.id)
				}
				w.objs["floating-ip-foreign"] = &object{kind: "floating-ip", name: "someone's", id: "floating-ip-foreign", project: onlyProject(t, w), owner: "someone"}
			},
			fips: 1,
			check: func(t *testing.T, h *harness) {
				if _, ok := h.w.objs["floating-ip-foreign"]; !ok {
					t.Error("someone else's floating IP was removed")
				}
				lb := h.record(t).LoadBalancers[0]
				if _, ok := h.w.objs[lb.FloatingIPID]; !ok || lb.FloatingIPID == "floating-ip-foreign" {
					t.Errorf("record names floating IP %q, not the one made again", lb.FloatingIPID)
				}
				if len(h.w.endpoints) == 0 || !slices.ContainsFunc(h.w.endpoints, func(e waldur.Endpoint) bool { return strings.Contains(e.URL, lb.FloatingIP) }) {
					t.Errorf("endpoints %v do not show the new address %s", h.w.endpoints, lb.FloatingIP)
				}
			},
		},
		"a floating IP an earlier pass made but did not record is recorded, not made again": {
			drift: func(t *testing.T, w *world) {
				for _, f := range w.byKind("floating-ip") {
					delete(w.objs, f.id)
					again := *f
					again.id = f.id + "-again"
					w.objs[again.id] = &again
				}
			},
			check: func(t *testing.T, h *harness) {
				if id := h.record(t).LoadBalancers[0].FloatingIPID; !strings.HasSuffix(id, "-again") {
					t.Errorf("record names floating IP %q, want the one on the port", id)
				}
				if n := len(h.w.byKind("floating-ip")); n != 1 {
					t.Errorf("%d floating IPs, want the one", n)
				}
			},
		},
		"a port holding someone else's floating IP errs the resource instead": {
			drift: func(t *testing.T, w *world) {
				// Someone released sitebus's floating IP and gave the
				// load balancer's port one of their own.
				for _, f := range w.byKind("floating-ip") {
					delete(w.objs, f.id)
					theirs := *f
					theirs.id, theirs.owner = f.id+"-theirs", "someone"
					w.objs[theirs.id] = &theirs
				}
			},
			problem: "is gone and its port has someone else's",
		},
		"a security group deleted altogether errs the resource, nothing is made": {
			drift: func(t *testing.T, w *world) {
				delete(w.objs, groupNamed(t, w, "k8s_public").id)
			},
			problem: "security group k8s_public",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h, p := createdCluster(t)
			tc.drift(t, h.w) // the create is over: nothing else touches the world
			groups := len(h.w.byKind("security-group"))
			if _, err := p.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(p.repairs.WithLabelValues(repairRule)); got != tc.rules {
				t.Errorf("%v rule repairs counted, want %v", got, tc.rules)
			}
			if got := testutil.ToFloat64(p.repairs.WithLabelValues(repairFloatingIP)); got != tc.fips {
				t.Errorf("%v floating IP repairs counted, want %v", got, tc.fips)
			}
			if n := len(h.w.byKind("security-group")); n != groups {
				t.Errorf("%d security groups after the pass, %d before: the pass makes no group", n, groups)
			}
			if tc.problem != "" && (h.w.resourceState != "Erred" || !strings.Contains(h.w.resourceError, tc.problem)) {
				t.Errorf("resource %q: %q, want erred with %q", h.w.resourceState, h.w.resourceError, tc.problem)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
			// A second pass finds nothing more to re-make.
			if _, err := p.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r, f := testutil.ToFloat64(p.repairs.WithLabelValues(repairRule)), testutil.ToFloat64(p.repairs.WithLabelValues(repairFloatingIP)); r != tc.rules || f != tc.fips {
				t.Errorf("a second pass repaired again: %v rules, %v floating IPs", r, f)
			}
		})
	}
}

// groupNamed is the tenant's security group called name.
func groupNamed(t *testing.T, w *world, name string) *object {
	t.Helper()
	for _, o := range w.objs {
		if o.kind == "security-group" && o.name == name {
			return o
		}
	}
	t.Fatalf("no security group %s", name)
	return nil
}

// onlyProject is the one zone's project.
func onlyProject(t *testing.T, w *world) string {
	t.Helper()
	for _, o := range w.objs {
		if o.kind == "project" {
			return o.id
		}
	}
	t.Fatal("no project")
	return ""
}
