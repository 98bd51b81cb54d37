package orders_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestCreateMakesTheManagedNamespaceAndSettlesTheOrder(t *testing.T) {
	s := newSite(t)
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: "genome-lab", Limits: map[string]int{"cpu": 4, "ram": 8, "storage": 100, "gpu": 1}})
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "done" {
		t.Fatalf("order %s: %s (%s)", orderUUID, o.State, o.ErrorMessage)
	}
	res, err := s.Admin.Resource(ctx(t), resUUID)
	if err != nil {
		t.Fatal(err)
	}
	if res.BackendID != "waldur-genome-lab" {
		t.Errorf("resource backend_id = %q, want waldur-genome-lab", res.BackendID)
	}
	cr := s.mustCR("waldur-genome-lab")
	spec, _, _ := unstructured.NestedMap(cr.Object, "spec")
	want := map[string]any{
		"name":   "waldur-genome-lab",
		"quota":  map[string]any{"cpu": "4", "memory": "8Gi", "storage": "100Gi", "gpu": "1"},
		"labels": map[string]any{"tier": "research"},
		"owner":  map[string]any{"orgID": customerUUID, "projectID": projectUUID},
	}
	if !reflect.DeepEqual(spec, want) {
		got, _ := json.Marshal(spec)
		exp, _ := json.Marshal(want)
		t.Errorf("spec =\n%s\nwant\n%s", got, exp)
	}
	if cr.GetLabels()["app.kubernetes.io/managed-by"] != "sitebus" {
		t.Errorf("CR is not marked as managed by sitebus: %v", cr.GetLabels())
	}
}

func TestUpdateChangesOnlyTheQuota(t *testing.T) {
	s := newSite(t)
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: "upd", Limits: map[string]int{"cpu": 2, "ram": 4, "storage": 10}})
	s.WaitOrder(orderUUID, "done")
	before := s.mustCR("waldur-upd")
	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 8, "ram": 16, "storage": 10}})
	if o := s.WaitOrder(upd, "done", "erred"); o.State != "done" {
		t.Fatalf("update order: %s (%s)", o.State, o.ErrorMessage)
	}
	after := s.mustCR("waldur-upd")
	if got, want := quota(after), map[string]string{"cpu": "8", "memory": "16Gi", "storage": "10Gi"}; !maps.Equal(got, want) {
		t.Errorf("quota after update = %v, want %v", got, want)
	}
	bs, _, _ := unstructured.NestedMap(before.Object, "spec")
	as, _, _ := unstructured.NestedMap(after.Object, "spec")
	delete(bs, "quota")
	delete(as, "quota")
	if !reflect.DeepEqual(bs, as) || !maps.Equal(before.GetLabels(), after.GetLabels()) || !maps.Equal(before.GetAnnotations(), after.GetAnnotations()) {
		t.Errorf("update changed more than spec.quota:\nbefore %v %v %v\nafter  %v %v %v", bs, before.GetLabels(), before.GetAnnotations(), as, after.GetLabels(), after.GetAnnotations())
	}
}

func TestPauseDownscaleRestore(t *testing.T) {
	s := newSite(t)
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: "flags", Limits: map[string]int{"cpu": 6, "ram": 12, "storage": 50, "gpu": 2}})
	s.WaitOrder(orderUUID, "done")
	original := map[string]string{"cpu": "6", "memory": "12Gi", "storage": "50Gi", "gpu": "2"}
	steps := []struct {
		name  string
		flags waldursim.FlagsRequest
		want  map[string]string
	}{
		{"pause zeroes cpu, memory and storage", waldursim.FlagsRequest{Paused: ptr(true)}, map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi", "gpu": "2"}},
		{"restore brings the limits back", waldursim.FlagsRequest{Paused: ptr(false)}, original},
		{"downscale sets the minimal quota", waldursim.FlagsRequest{Downscaled: ptr(true)}, map[string]string{"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpu": "2"}},
		{"pause while downscaled zeroes", waldursim.FlagsRequest{Paused: ptr(true)}, map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi", "gpu": "2"}},
		{"clearing both restores the original limits", waldursim.FlagsRequest{Paused: ptr(false), Downscaled: ptr(false)}, original},
	}
	for _, st := range steps {
		if _, err := s.Admin.SetFlags(ctx(t), resUUID, st.flags); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		deadline := time.Now().Add(30 * time.Second)
		for got = quota(s.mustCR("waldur-flags")); !maps.Equal(got, st.want); got = quota(s.mustCR("waldur-flags")) {
			if time.Now().After(deadline) {
				cr := s.mustCR("waldur-flags")
				t.Fatalf("%s: quota %v, want %v (annotations %v)\n%s", st.name, got, st.want, cr.GetAnnotations(), s.Sitebus.Tail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestTerminateDeletesTheCR(t *testing.T) {
	s := newSite(t)
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: "bye", Limits: map[string]int{"cpu": 1}})
	s.WaitOrder(orderUUID, "done")
	s.mustCR("waldur-bye")
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
	if o := s.WaitOrder(term, "done", "erred"); o.State != "done" {
		t.Fatalf("terminate: %s (%s)", o.State, o.ErrorMessage)
	}
	if _, err := s.cr("waldur-bye"); err == nil {
		t.Error("the ManagedNamespace is still there after terminate")
	}
}

func TestSameOrderEventTwiceCreatesOnce(t *testing.T) {
	s := newSite(t)
	res, err := s.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "twice", Limits: map[string]int{"cpu": 1}, Silent: true})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"order_uuid": "` + strings.ReplaceAll(res.Order.UUID, "-", "") + `", "order_state": "pending-provider", "offering_uuid": "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"}`
	// Two frames with different ids: both reach the order service.
	for _, id := range []string{"twice-1", "twice-2"} {
		if _, err := s.Admin.PublishRaw(ctx(t), waldursim.RawEventRequest{OfferingUUID: "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d", ObjectType: "order", Body: body, MessageID: id}); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitOrder(res.Order.UUID, "done")
	// The order is done after the first event; the second may still be in
	// its handler. Count once the order consumer has settled both.
	waitHandled(t, s, "order", "twice-1", "twice-2")
	if n := s.crCount(); n != 1 {
		t.Errorf("%d ManagedNamespaces, want 1", n)
	}
	if got := s.Metric(`sitebus_http_client_requests_total{code="201",method="POST",target="kubernetes"}`); got != "1" {
		t.Errorf("Kubernetes creates = %q, want 1", got)
	}
}

func TestKilledBeforeSetStateDoneThenRestarted(t *testing.T) {
	s := newSite(t, harness.WithoutStart())
	s.Start("SITEBUS_FAILPOINTS=order/before-done=pause")
	orderUUID, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "crashy", Limits: map[string]int{"cpu": 2}})
	harness.Eventually(t, 60*time.Second, "the CR before the crash", func() bool { _, err := s.cr("waldur-crashy"); return err == nil })
	if o, _ := s.Admin.Order(ctx(t), orderUUID); o.State != "executing" {
		t.Fatalf("order is %s before the crash, want executing", o.State)
	}
	s.Sitebus.Kill()
	s.Start()
	s.WaitOrder(orderUUID, "done")
	if n := s.crCount(); n != 1 {
		t.Errorf("%d ManagedNamespaces after crash and restart, want 1", n)
	}
}

func TestInvalidNamesAreRefused(t *testing.T) {
	s := newSite(t)
	long := strings.Repeat("a", 60)
	tests := map[string]struct{ slug, want string }{
		"upper case and underscore": {slug: "Bad_Slug", want: "Namespace name 'waldur-Bad_Slug' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		"over 63 characters":        {slug: long, want: "Namespace name 'waldur-" + long + "' exceeds 63 characters (67)"},
		"a dot that would escape":   {slug: "x.kube-system", want: "is not a valid RFC 1123 label"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			orderUUID, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "n-" + name, ResourceSlug: tc.slug, Limits: map[string]int{"cpu": 1}})
			o := s.WaitOrder(orderUUID, "done", "erred")
			if o.State != "erred" || !strings.Contains(o.ErrorMessage, tc.want) {
				t.Errorf("order %s: %q, want erred with %q", o.State, o.ErrorMessage, tc.want)
			}
		})
	}
	if n := s.crCount(); n != 0 {
		t.Errorf("%d ManagedNamespaces created for invalid names", n)
	}
}

func TestForeignCRIsNotTouched(t *testing.T) {
	s := newSite(t)
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "provisioning.hpc.ut.ee/v1", "kind": "ManagedNamespace",
		"metadata": map[string]any{"name": "waldur-taken", "namespace": s.CRNamespace, "labels": map[string]any{"owner": "another-team"}},
		"spec":     map[string]any{"name": "waldur-taken", "quota": map[string]any{"cpu": "64"}},
	}}
	created, err := s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).Create(ctx(t), foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orderUUID, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "taken", Limits: map[string]int{"cpu": 1}})
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") {
		t.Errorf("order %s: %q, want erred because the CR is foreign", o.State, o.ErrorMessage)
	}
	after := s.mustCR("waldur-taken")
	if after.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("the foreign CR was modified (resourceVersion %s → %s)", created.GetResourceVersion(), after.GetResourceVersion())
	}
}

func TestAPIServerOutageDelaysButDoesNotFailOrders(t *testing.T) {
	kube.Require(t)
	cluster := kube.StartForTest(t, kube.Options{NoControllerManager: true})
	s := newSite(t, harness.WithCluster(cluster))
	if err := cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	var orders []string
	for i := range 3 {
		u, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "outage-" + string(rune('a'+i)), Limits: map[string]int{"cpu": 1}})
		orders = append(orders, u)
	}
	// Approved (executing), then several failed attempts each: wait for
	// those events rather than for a time they usually fit in.
	for _, u := range orders {
		if o := s.WaitOrder(u, "executing", "done", "erred"); o.State != "executing" {
			t.Fatalf("order %s is %s during the outage, want executing (%s)", u, o.State, o.ErrorMessage)
		}
	}
	s.metricAtLeast(t, `sitebus_bus_handled_total{consumer="order",outcome="retry"}`, float64(2*len(orders)))
	for _, u := range orders {
		if o, _ := s.Admin.Order(ctx(t), u); o.State != "executing" {
			t.Fatalf("order %s is %s during the outage, want executing (%s)", u, o.State, o.ErrorMessage)
		}
	}
	if err := cluster.StartAPIServer(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, u := range orders {
		if o := s.WaitOrder(u, "done", "erred"); o.State != "done" {
			t.Errorf("order %s: %s (%s)", u, o.State, o.ErrorMessage)
		}
	}
}

func ptr[T any](v T) *T { return &v }
