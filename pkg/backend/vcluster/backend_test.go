package vcluster

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sitebus/sitebus/pkg/backend"
)

func newTestBackend(t *testing.T, objs ...corev1.Namespace) (*Backend, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	for i := range objs {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &objs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := DecodeSettings(with(importSettings(), "rancher_project_id", "p-abc"))
	if err != nil {
		t.Fatal(err)
	}
	return NewWithClient(s, cs, nil), cs
}

var res = backend.Resource{UUID: "r1", Slug: "demo", Limits: map[string]float64{"cpu": 2, "ram": 4, "storage": 10}}

func TestCreateMarksNamespaceAndQuota(t *testing.T) {
	ctx := context.Background()
	b, cs := newTestBackend(t)
	c, err := b.Create(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if c.BackendID != "vc-demo" || c.Existed {
		t.Fatalf("created %+v", c)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Annotations[AnnotationManaged] != "true" || ns.Annotations[AnnotationResourceUUID] != "r1" ||
		ns.Labels[RancherProjectKey] != "p-abc" || ns.Annotations[RancherProjectKey] != "c-m-host1:p-abc" {
		t.Fatalf("namespace marks: %v %v", ns.Labels, ns.Annotations)
	}
	rq, err := cs.CoreV1().ResourceQuotas("vc-demo").Get(ctx, QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := rq.Spec.Hard[corev1.ResourceRequestsMemory]; q.Cmp(resource.MustParse("4Gi")) != 0 {
		t.Fatalf("memory quota %v", q.String())
	}
	if _, err := cs.CoreV1().LimitRanges("vc-demo").Get(ctx, LimitRangeName, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := b.Create(ctx, res)
	if err != nil || !again.Existed || again.Limits["cpu"] != 2 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
}

// rancher_project_map places a resource's namespace in its Waldur
// project's Rancher project, which the member sync then reads back from
// the namespace.
func TestCreatePlacesTheNamespaceInTheMappedProject(t *testing.T) {
	ctx := context.Background()
	s, err := DecodeSettings(with(importSettings(), "rancher_project_id", "p-abc",
		"rancher_project_map", map[string]any{"0123456789abcdef0123456789abcdef": "p-physics"}))
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	b := NewWithClient(s, cs, nil)
	r := res
	r.ProjectUUID = "01234567-89ab-cdef-0123-456789abcdef"
	if _, err := b.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[RancherProjectKey] != "p-physics" || ns.Annotations[RancherProjectKey] != "c-m-host1:p-physics" {
		t.Fatalf("project marks: %v %v", ns.Labels, ns.Annotations)
	}
	if p, err := b.NamespaceProject(ctx, "vc-demo"); err != nil || p != "c-m-host1:p-physics" {
		t.Fatalf("NamespaceProject = %q, %v", p, err)
	}
}

func TestCreateRefusesForeignNamespaceUntouched(t *testing.T) {
	tests := []struct {
		name string
		ns   corev1.Namespace
		want string
	}{
		{name: "no marks", ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Labels: map[string]string{"team": "x"}}},
			want: "not managed by sitebus"},
		{name: "another resource's", ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Labels: map[string]string{LabelManaged: "true"},
			Annotations: map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: "other"}}}, want: `belongs to Waldur resource "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			b, cs := newTestBackend(t, tt.ns)
			_, err := b.Create(ctx, res)
			if !errors.Is(err, backend.ErrNotManaged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v", err)
			}
			if err := b.DeleteNamespace(ctx, "vc-demo", "r1"); !errors.Is(err, backend.ErrNotManaged) {
				t.Fatalf("delete err = %v", err)
			}
			ns, err := cs.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ns.Annotations) != len(tt.ns.Annotations) || len(ns.Labels) != len(tt.ns.Labels) {
				t.Fatalf("foreign namespace changed: %v %v", ns.Labels, ns.Annotations)
			}
			l, _ := cs.CoreV1().ResourceQuotas("vc-demo").List(ctx, metav1.ListOptions{})
			if len(l.Items) != 0 {
				t.Fatalf("quota written into a foreign namespace")
			}
		})
	}
}

func TestFlagsRememberAndRestoreLimits(t *testing.T) {
	ctx := context.Background()
	b, _ := newTestBackend(t)
	if _, err := b.Create(ctx, res); err != nil {
		t.Fatal(err)
	}
	if err := b.Pause(ctx, "vc-demo"); err != nil {
		t.Fatal(err)
	}
	if l, _ := b.Limits(ctx, "vc-demo"); l["cpu"] != 0 {
		t.Fatalf("paused limits %v", l)
	}
	if err := b.Downscale(ctx, "vc-demo"); err != nil {
		t.Fatal(err)
	}
	// A limit change while downscaled is remembered for Restore.
	if _, err := b.SetLimits(ctx, "vc-demo", map[string]float64{"cpu": 3, "ram": 4, "storage": 10}); err != nil {
		t.Fatal(err)
	}
	objs, err := b.List(ctx)
	if err != nil || len(objs) != 1 || objs[0].Status != backend.StatusDownscaled {
		t.Fatalf("list %+v %v", objs, err)
	}
	if err := b.Restore(ctx, "vc-demo"); err != nil {
		t.Fatal(err)
	}
	if l, _ := b.Limits(ctx, "vc-demo"); l["cpu"] != 3 || l["ram"] != 4 {
		t.Fatalf("restored limits %v", l)
	}
	if _, err := b.SetLimits(ctx, "vc-demo", map[string]float64{"cpu": -1}); !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("negative limit: %v", err)
	}
}

func TestUsageSumsPodRequestsAndPVCs(t *testing.T) {
	ctx := context.Background()
	b, cs := newTestBackend(t)
	if _, err := b.Create(ctx, res); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "vc-demo"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "vc-demo"}, Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}}}
	if _, err := cs.CoreV1().Pods("vc-demo").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("vc-demo").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := b.Usage(ctx, "vc-demo")
	if err != nil {
		t.Fatal(err)
	}
	if u["cpu"] != 0.5 || u["ram"] != 1 || u["storage"] != 5 {
		t.Fatalf("usage %v", u)
	}
	all, err := b.UsageAll(ctx, []string{"vc-demo", "vc-gone"})
	if err != nil || len(all) != 1 {
		t.Fatalf("usage all %v %v", all, err)
	}
}

func TestVirtualConfigNeverQuotesTheKubeconfig(t *testing.T) {
	ctx := context.Background()
	b, cs := newTestBackend(t)
	if _, err := b.Create(ctx, res); err != nil {
		t.Fatal(err)
	}
	if _, err := b.VirtualConfig(ctx, "vc-demo"); !errors.Is(err, ErrNoKubeconfig) {
		t.Fatalf("absent secret: %v", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Namespace: "vc-demo"}, Data: map[string][]byte{"config": []byte("token: hunter2\n:::")}}
	if _, err := cs.CoreV1().Secrets("vc-demo").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := b.VirtualConfig(ctx, "vc-demo")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad kubeconfig: %v", err)
	}
	good := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://localhost:8443\nusers:\n- name: u\n  user:\n    token: hunter2\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	sec.Data["config"] = []byte(good)
	if _, err := cs.CoreV1().Secrets("vc-demo").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.settings.Server = "https://vc-demo.example.com:443"
	cfg, err := b.VirtualConfig(ctx, "vc-demo")
	if err != nil || cfg.Host != "https://vc-demo.example.com:443" || cfg.BearerToken != "hunter2" {
		t.Fatalf("config %v %v", cfg, err)
	}
}

// The kubeconfig names the server its certificate is for (127.0.0.1 here,
// as vCluster's names localhost); vcluster_server reaches it under another
// name that the certificate does not carry, and TLS still verifies.
func TestVirtualConfigServerOverrideVerifiesTheKubeconfigsServerName(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"gitVersion":"v1.31.0"}`))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:" + u.Port() +
		"\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) +
		"\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	b, cs := newTestBackend(t)
	if _, err := b.Create(ctx, res); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Namespace: "vc-demo"}, Data: map[string][]byte{"config": []byte(kc)}}
	if _, err := cs.CoreV1().Secrets("vc-demo").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// "localhost" is not in httptest's certificate (127.0.0.1, ::1 and
	// example.com are).
	b.settings.Server = "https://localhost:" + u.Port()
	cfg, err := b.VirtualConfig(ctx, "vc-demo")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != b.settings.Server || cfg.ServerName != "127.0.0.1" {
		t.Fatalf("host %q server name %q", cfg.Host, cfg.ServerName)
	}
	if v, err := Version(ctx, cfg); err != nil || v != "v1.31.0" {
		t.Fatalf("/version through the override: %q %v", v, err)
	}
}
