package deploy_test

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/kube/manifest"
)

func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) { return manifest.Decode(data) }

// decodeSecret returns key of a Secret read back (the server keeps
// stringData as base64 data).
func decodeSecret(t *testing.T, s *unstructured.Unstructured, key string) string {
	t.Helper()
	enc, _, _ := unstructured.NestedString(s.Object, "data", key)
	dec, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(dec) == 0 {
		t.Fatalf("Secret %s: key %s: %q %v", s.GetName(), key, enc, err)
	}
	return string(dec)
}

// checkRBAC reads back each backend's grants, bound to the chart's service
// account in the release namespace.
func checkRBAC(t *testing.T, ctx context.Context, c *kube.Cluster, objs []*unstructured.Unstructured, ns, crNS string, okd bool) {
	t.Helper()
	want := map[string][]string{
		"Role/sitebus-managednamespaces":   {"managednamespaces"},
		"ClusterRole/sitebus-usage-reader": {"pods", "persistentvolumeclaims"},
	}
	if okd {
		want["ClusterRole/sitebus-okd"] = []string{"namespaces", "resourcequotas", "rolebindings"}
	} else if find(objs, "ClusterRole", "sitebus-okd") != nil {
		t.Error("rbac.okd=false still renders the OKD ClusterRole")
	}
	for ref, resources := range want {
		kind, name, _ := strings.Cut(ref, "/")
		role := get(t, ctx, c, find(objs, kind, name))
		if kind == "Role" && role.GetNamespace() != crNS {
			t.Errorf("%s in %q, want the CR namespace %q", ref, role.GetNamespace(), crNS)
		}
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		var granted []string
		for _, r := range rules {
			rs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			granted = append(granted, rs...)
		}
		for _, r := range resources {
			if !slices.Contains(granted, r) {
				t.Errorf("%s grants %v, not %s", ref, granted, r)
			}
		}
		binding := get(t, ctx, c, find(objs, kind+"Binding", name))
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != "sitebus" || subjects[0].(map[string]any)["namespace"] != ns {
			t.Errorf("%sBinding %s: subjects %v, want ServiceAccount %s/sitebus", kind, name, subjects, ns)
		}
	}
}

// checkNATS reads back the JetStream cluster: three servers with disks,
// routes to each through the headless Service, PubAck on disk.
func checkNATS(t *testing.T, ctx context.Context, c *kube.Cluster, sts, cm *unstructured.Unstructured, ns string) {
	t.Helper()
	if r, _, _ := unstructured.NestedInt64(sts.Object, "spec", "replicas"); r != 3 {
		t.Errorf("NATS StatefulSet: %d replicas, want 3", r)
	}
	if svc, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName"); svc != "sitebus-nats" {
		t.Errorf("NATS StatefulSet: serviceName %q, want the headless sitebus-nats", svc)
	}
	if pvcs, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates"); len(pvcs) != 1 {
		t.Errorf("NATS StatefulSet: %d volumeClaimTemplates, want 1", len(pvcs))
	}
	svc := get(t, ctx, c, findIn(cm, "Service"))
	if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("NATS Service: clusterIP %q, want headless", ip)
	}
	conf, _, _ := unstructured.NestedString(get(t, ctx, c, cm).Object, "data", "nats.conf")
	for _, want := range []string{
		"sync_interval: always",
		"nats://sitebus-nats-0.sitebus-nats." + ns + ".svc:6222",
		"nats://sitebus-nats-2.sitebus-nats." + ns + ".svc:6222",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nats.conf lacks %q:\n%s", want, conf)
		}
	}
	if get(t, ctx, c, findIn(cm, "PodDisruptionBudget")) == nil {
		t.Error("no NATS PodDisruptionBudget")
	}
}

// findIn names the object of kind beside cm (same name and namespace).
func findIn(cm *unstructured.Unstructured, kind string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	if kind == "PodDisruptionBudget" {
		o.SetAPIVersion("policy/v1")
	}
	o.SetKind(kind)
	o.SetName(cm.GetName())
	o.SetNamespace(cm.GetNamespace())
	return o
}

// serviceMonitorCRD is enough of the Prometheus Operator's CRD for the API
// server to store ServiceMonitors (this test does not run the operator).
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: servicemonitors, singular: servicemonitor, kind: ServiceMonitor, listKind: ServiceMonitorList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
