package vcluster

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/backend"
)

func TestReleaseName(t *testing.T) {
	long := strings.Repeat("a", MaxReleaseName+1)
	tests := []struct {
		name, ns, want string
		invalid        bool
	}{
		{name: "the slug of vc-<slug>", ns: "vc-demo", want: "demo"},
		{name: "the longest slug Helm takes", ns: "vc-" + long[1:], want: long[1:]},
		{name: "a slug too long for Helm is refused, not shortened", ns: "vc-" + long, invalid: true},
		{name: "a namespace that is no virtual cluster's", ns: "default", invalid: true},
		{name: "the prefix alone", ns: "vc-", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReleaseName(tt.ns)
			if tt.invalid {
				if !errors.Is(err, backend.ErrInvalid) {
					t.Fatalf("ReleaseName(%q) = %q, %v; want ErrInvalid", tt.ns, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReleaseName(%q) = %q, %v; want %q", tt.ns, got, err, tt.want)
			}
		})
	}
}

func TestImageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.31.2": "v1.31.2", "1.31.2": "v1.31.2", "v1.31": "v1.31.0", "1.30": "v1.30.0",
		"v1.31.2-rc.1": "v1.31.2-rc.1", "1.29+k3s1": "v1.29.0+k3s1",
	} {
		if got := ImageVersion(in); got != want {
			t.Errorf("ImageVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHelmValues(t *testing.T) {
	const uuid = "5f2b"
	marks := map[string]any{"resourceUUID": uuid}
	tests := []struct {
		name    string
		version string
		limits  map[string]float64
		want    map[string]any
	}{
		{name: "no attributes keep the chart's version and resources", want: map[string]any{"sitebus": marks}},
		{name: "the order's version and limits", version: "1.31", limits: map[string]float64{"cpu": 2, "ram": 4, "storage": 10},
			want: map[string]any{"sitebus": marks, "kubernetes": map[string]any{"version": "v1.31.0"},
				"resources": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "4Gi"}}}},
		{name: "limits under the chart's requests become the requests", limits: map[string]float64{"cpu": 0.1, "ram": 0.125},
			want: map[string]any{"sitebus": marks, "resources": map[string]any{
				"limits": map[string]any{"cpu": "0.1", "memory": "0.125Gi"}, "requests": map[string]any{"cpu": "0.1", "memory": "0.125Gi"}}}},
		{name: "a zero limit keeps the chart's", limits: map[string]float64{"cpu": 0, "ram": 1.5},
			want: map[string]any{"sitebus": marks, "resources": map[string]any{"limits": map[string]any{"memory": "1.5Gi"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HelmValues(uuid, tt.version, tt.limits); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("HelmValues = %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// rendered are the chart's objects for a resource, by kind/name.
func rendered(t *testing.T, version string, limits map[string]float64) map[string]map[string]any {
	t.Helper()
	d, err := NewHelmDriver(&rest.Config{Host: "https://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := d.render("vc-demo", "res-uuid", version, limits)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		md := obj["metadata"].(map[string]any)
		out[obj["kind"].(string)+"/"+md["name"].(string)] = obj
	}
	return out
}

// dig walks nested maps and lists (an int key indexes a list).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestTheChartRendersVClustersObjectsWithSitebusMarks(t *testing.T) {
	objs := rendered(t, "1.31", map[string]float64{"cpu": 2, "ram": 4})
	want := []string{"ServiceAccount/vc-demo", "ServiceAccount/vc-workload-demo", "Role/vc-demo", "RoleBinding/vc-demo",
		"Secret/vc-config-demo", "Service/demo", "Service/demo-headless", "StatefulSet/demo"}
	for _, k := range want {
		obj, ok := objs[k]
		if !ok {
			t.Errorf("no %s among %v", k, len(objs))
			continue
		}
		if dig(obj, "metadata", "namespace") != "vc-demo" || dig(obj, "metadata", "labels", LabelManaged) != "true" ||
			dig(obj, "metadata", "annotations", AnnotationManaged) != "true" || dig(obj, "metadata", "annotations", AnnotationResourceUUID) != "res-uuid" {
			t.Errorf("%s lacks sitebus's marks: %v", k, obj["metadata"])
		}
	}
	if len(objs) != len(want) {
		t.Errorf("%d objects, want %d", len(objs), len(want))
	}
	svc := objs["Service/demo"]
	if dig(svc, "metadata", "labels", LabelVClusterApp) != "vcluster" || dig(svc, "spec", "ports", 0, "port") != 443 ||
		dig(svc, "spec", "ports", 0, "targetPort") != 8443 {
		t.Errorf("API Service %v, want app=vcluster and 443 -> 8443", svc["spec"])
	}
	sts := objs["StatefulSet/demo"]
	c := dig(sts, "spec", "template", "spec", "containers", 0)
	if img, _ := dig(c, "image").(string); !strings.HasPrefix(img, "ghcr.io/loft-sh/vcluster-oss:") {
		t.Errorf("control plane image %q, want loft-sh's vcluster", img)
	}
	if dig(c, "resources", "limits", "cpu") != "2" || dig(c, "resources", "limits", "memory") != "4Gi" || dig(c, "resources", "requests", "cpu") != "200m" {
		t.Errorf("control plane resources %v", dig(c, "resources"))
	}
	if img := dig(sts, "spec", "template", "spec", "initContainers", 0, "image"); img != "ghcr.io/loft-sh/kubernetes:v1.31.0" {
		t.Errorf("Kubernetes image %v, want the order's version", img)
	}
	if dig(sts, "spec", "template", "spec", "serviceAccountName") != "vc-demo" {
		t.Errorf("control plane's service account %v", dig(sts, "spec", "template", "spec", "serviceAccountName"))
	}
	cfg, _ := dig(objs["Secret/vc-config-demo"], "stringData", "config.yaml").(string)
	var vcfg map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &vcfg); err != nil {
		t.Fatalf("vcluster.yaml: %v", err)
	}
	if dig(vcfg, "exportKubeConfig", "secret", "name") != SecretName("vc-demo") || dig(vcfg, "exportKubeConfig", "server") != "https://demo.vc-demo:443" ||
		dig(vcfg, "controlPlane", "distro", "k8s", "version") != "v1.31.0" {
		t.Errorf("vcluster.yaml %v: want the kubeconfig in Secret %s for the Service, Kubernetes v1.31.0", vcfg, SecretName("vc-demo"))
	}
}

func TestTheChartRendersItsDefaultsWithoutAttributes(t *testing.T) {
	objs := rendered(t, "", nil)
	c := dig(objs["StatefulSet/demo"], "spec", "template", "spec", "containers", 0)
	if dig(c, "resources", "limits", "cpu") != nil || dig(c, "resources", "limits", "memory") != "2Gi" {
		t.Errorf("control plane resources %v, want the chart's", dig(c, "resources"))
	}
	if img := dig(objs["StatefulSet/demo"], "spec", "template", "spec", "initContainers", 0, "image"); img != "ghcr.io/loft-sh/kubernetes:v1.33.4" {
		t.Errorf("Kubernetes image %v, want the chart's default", img)
	}
}

func TestTheChartRefusesAReleaseWithoutAResource(t *testing.T) {
	d, err := NewHelmDriver(&rest.Config{Host: "https://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.render("vc-demo", "", "", nil); err == nil || !strings.Contains(err.Error(), "sitebus.resourceUUID is required") {
		t.Fatalf("render without a resource: %v", err)
	}
}
