package okd_test

import (
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/okd"
)

// waitQuota waits until waldur-quota of ns holds exactly want.
func (s *site) waitQuota(what, ns string, want map[string]string) {
	s.t.Helper()
	var seen map[string]string
	harness.Eventually(s.t, 60*time.Second, what, func() bool {
		got := s.hardQuota(ns)
		if !maps.Equal(got, seen) { // each quota seen once in the log of a failure
			s.t.Logf("%s: quota %v, want %v", what, got, want)
			seen = got
		}
		return maps.Equal(got, want)
	})
}

// waitBindings waits until the project's waldur-* bindings are exactly want.
func (s *site) waitBindings(what, ns string, want map[string]string) {
	s.t.Helper()
	var seen map[string]string
	harness.Eventually(s.t, 60*time.Second, what, func() bool {
		got := s.bindings(ns)
		if !maps.Equal(got, seen) {
			s.t.Logf("%s: bindings %v, want %v", what, got, want)
			seen = got
		}
		return maps.Equal(got, want)
	})
}

func ptr[T any](v T) *T { return &v }

func TestOKDProjectLifecycle(t *testing.T) {
	s := newSite(t)
	resUUID, res := s.createDone("web-lab", map[string]int{"cpu": 2, "ram": 4, "storage": 10},
		member("alice01", "PROJECT.MANAGER"), member("bob01", "PROJECT.MEMBER"))
	ns := res.BackendID
	if want := s.Prefix + "alloc-" + res.Slug; ns != want {
		t.Fatalf("backend_id %q, want %q", ns, want)
	}

	t.Run("the project carries the seed's annotations and sitebus's mark", func(t *testing.T) {
		p, found, err := s.OKD.Project(ctx(t), ns)
		if err != nil || !found {
			t.Fatalf("project %s: %v, %v", ns, found, err)
		}
		want := map[string]string{
			"openshift.io/display-name": "web-lab",
			"openshift.io/description":  "web-lab",
			"waldur/organization":       s.Prefix + "org-" + res.CustomerSlug,
			"waldur/parent":             s.Prefix + "proj-" + res.ProjectSlug,
			okd.AnnotationResourceUUID:  resUUID,
		}
		for k, v := range want {
			if p.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, p.Annotations[k], v)
			}
		}
		if p.Labels[okd.LabelManagedBy] != okd.ManagedByValue {
			t.Errorf("labels %v lack sitebus's mark", p.Labels)
		}
	})

	created := map[string]string{"requests.cpu": "2", "limits.cpu": "4", "requests.memory": "4Gi", "limits.memory": "8Gi", "requests.storage": "10Gi"}
	t.Run("the quota has the limits, CPU and memory limits at twice the requests", func(t *testing.T) {
		s.waitQuota("quota after create", ns, created)
	})

	t.Run("a binding per team member with the mapped ClusterRole", func(t *testing.T) {
		s.waitBindings("bindings after create", ns, map[string]string{"alice01": "edit", "bob01": "view"})
	})

	updated := map[string]string{"requests.cpu": "3", "limits.cpu": "6", "requests.memory": "6Gi", "limits.memory": "12Gi", "requests.storage": "10Gi"}
	t.Run("an update changes the quota", func(t *testing.T) {
		up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 3, "ram": 6, "storage": 10}})
		if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
			t.Fatalf("update: %s (%s)", o.State, o.ErrorMessage)
		}
		s.waitQuota("quota after update", ns, updated)
	})

	t.Run("a role change re-binds to the new ClusterRole", func(t *testing.T) {
		s.setTeam(resUUID, member("bob01", "PROJECT.MANAGER"), true)
		s.waitBindings("bob01 re-bound", ns, map[string]string{"alice01": "edit", "bob01": "edit"})
	})

	t.Run("a removed member loses the binding", func(t *testing.T) {
		s.setTeam(resUUID, member("alice01", "PROJECT.MANAGER"), false)
		s.waitBindings("alice01 unbound", ns, map[string]string{"bob01": "edit"})
	})

	t.Run("pause, downscale, and restore to the limits of before", func(t *testing.T) {
		downscaled := map[string]string{"requests.cpu": "1", "limits.cpu": "2", "requests.memory": "1Gi", "limits.memory": "2Gi", "requests.storage": "1Gi", "pods": "1"}
		steps := []struct {
			name  string
			flags waldursim.FlagsRequest
			check func(map[string]string) bool
		}{
			{"pause zeroes every limit", waldursim.FlagsRequest{Paused: ptr(true)}, allZero},
			{"unpause restores the limits of before", waldursim.FlagsRequest{Paused: ptr(false)}, equal(updated)},
			{"downscale to the minimum", waldursim.FlagsRequest{Downscaled: ptr(true)}, equal(downscaled)},
			{"clearing it restores the limits of before", waldursim.FlagsRequest{Downscaled: ptr(false)}, equal(updated)},
		}
		for _, st := range steps {
			if _, err := s.Admin.SetFlags(ctx(t), resUUID, st.flags); err != nil {
				t.Fatal(err)
			}
			var seen map[string]string
			harness.Eventually(t, 60*time.Second, st.name, func() bool {
				got := s.hardQuota(ns)
				if !maps.Equal(got, seen) {
					t.Logf("%s: quota %v", st.name, got)
					seen = got
				}
				return st.check(got)
			})
		}
	})

	t.Run("terminate removes the project", func(t *testing.T) {
		s.terminateDone(t, resUUID, ns)
	})
}

func allZero(hard map[string]string) bool {
	if hard["requests.cpu"] == "" {
		return false
	}
	for _, v := range hard {
		if v != "0" {
			return false
		}
	}
	return true
}

// rotateUnseen creates a resource named slug, then has the API server
// stop taking the token while sitebus's file still looks unchanged (the
// new token written with the old size and time, as a copy that keeps times
// does), and empties the OKD call log. fill is the new token's letter.
func (s *site) rotateUnseen(slug, fill string) (create, resUUID, backendID, old, fresh string) {
	t := s.t
	t.Helper()
	create, resUUID = s.Create(slug, map[string]int{"cpu": 1, "ram": 1, "storage": 1})
	if o := s.WaitOrder(create, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	res, err := s.Admin.Resource(ctx(t), resUUID)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.OKDTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	old = s.OKD.Token()
	fresh = "sha256~" + strings.Repeat(fill, len(old)-len("sha256~"))
	if err := s.OKD.RotateToken(fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.OKDTokenFile, []byte(fresh+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(s.OKDTokenFile, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	s.OKD.ResetCalls()
	return create, resUUID, res.BackendID, old, fresh
}

func equal(want map[string]string) func(map[string]string) bool {
	return func(got map[string]string) bool { return maps.Equal(got, want) }
}

// The API server stops taking the token while sitebus's file still looks
// unchanged (same size and time, as a copy that keeps times does): the
// next call gets one 401, sitebus reads the file again, the call succeeds
// and no order errs.
func TestOKDTokenRotatedMidRun(t *testing.T) {
	s := newSite(t)
	create, resUUID, backendID, old, fresh := s.rotateUnseen("rotate", "r")
	up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 2, "ram": 1, "storage": 1}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update after the rotation: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	s.waitQuota("quota after the rotation", backendID, map[string]string{"requests.cpu": "2", "limits.cpu": "4",
		"requests.memory": "1Gi", "limits.memory": "2Gi", "requests.storage": "1Gi"})
	if n := s.OKD.CallCount("", "/", 401); n != 1 {
		t.Errorf("%d calls answered 401, want exactly one", n)
	}
	for _, uuid := range []string{create, up} {
		if o, err := s.Admin.Order(ctx(t), uuid); err != nil || o.State != "done" {
			t.Errorf("order %s: %+v, %v", uuid, o, err)
		}
	}
	if strings.Contains(s.Sitebus.Output(), fresh) || strings.Contains(s.Sitebus.Output(), old) {
		t.Error("sitebus logged the OpenShift token")
	}
}

// A project of the same name that sitebus did not make (another user's)
// fails the order and stays as it was: no quota, no bindings, no change.
func TestOKDForeignProjectIsRefused(t *testing.T) {
	s := newSite(t)
	res := harness.CreateOrderSilent(t, s.Admin, "taken", map[string]int{"cpu": 1, "ram": 1, "storage": 1}, member("alice01", "PROJECT.MANAGER"))
	name := s.Prefix + "alloc-" + res.Resource.Slug
	if err := s.OKD.SeedProject(ctx(t), okdsim.Project{Name: name, DisplayName: "Theirs",
		Annotations: map[string]string{"waldur/organization": "someone"}, Labels: map[string]string{"team": "other"}}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Cluster.Dynamic().Resource(namespaceGVR).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Deliver(res.Order.UUID)
	o := s.WaitOrder(res.Order.UUID, "done", "erred")
	if o.State != "erred" {
		t.Fatalf("order %s, want erred", o.State)
	}
	after, err := s.Cluster.Dynamic().Resource(namespaceGVR).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("foreign project: %v", err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() || after.GetDeletionTimestamp() != nil ||
		!maps.Equal(after.GetLabels(), before.GetLabels()) || !maps.Equal(after.GetAnnotations(), before.GetAnnotations()) {
		t.Errorf("foreign project changed:\nbefore %v\nafter  %v", before.Object, after.Object)
	}
	if q := s.hardQuota(name); q != nil {
		t.Errorf("foreign project got a quota: %v", q)
	}
	if b := s.bindings(name); len(b) != 0 {
		t.Errorf("foreign project got bindings: %v", b)
	}
}
