package provisioner_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

var (
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// argoKubeconfig writes a kubeconfig of the cluster's admin with the CA
// inline, as an ArgoCD kubeconfig is handed to sitebus, and returns its path.
func argoKubeconfig(t *testing.T, c *kube.Cluster) string {
	t.Helper()
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: argocd\n" +
		"clusters:\n- name: argocd\n  cluster: {server: " + c.Server + ", certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) + "}\n" +
		"users:\n- name: admin\n  user: {token: " + c.Token + "}\n" +
		"contexts:\n- name: argocd\n  context: {cluster: argocd, user: admin}\n"
	path := filepath.Join(t.TempDir(), "argocd-kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// oneZone is a managed create of one zone with one worker and Longhorn.
func oneZone(name string) map[string]any {
	attrs := createAttributes(name, 1)
	attrs["openstack_offering_uuid_list"] = []any{zones[0].uuid}
	return attrs
}

// ArgoCD runs on a real kube-apiserver: a create registers the cluster
// there (the Secret with its Longhorn label); with ArgoCD down, the create
// still finishes, keeps its cluster and says why in Waldur's backend
// metadata (Mastermind only logs it).
func TestArgoCDRegistersTheClusterAndItsFailureNeverUndoesIt(t *testing.T) {
	argo := kube.StartForTest(t, kube.Options{NoControllerManager: true})
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "argocd"}}}
	if _, err := argo.Dynamic().Resource(namespaces).Create(ctx(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := newSiteWith(t, siteOptions{argoKubeconfig: argoKubeconfig(t, argo), argoNamespace: "argocd"})

	t.Run("the cluster's Secret lands in ArgoCD's namespace with the Longhorn label", func(t *testing.T) {
		orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: "argo-up", Attributes: oneZone("argo-up")})
		if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
			t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
		}
		name := "cluster-" + strings.ReplaceAll(resUUID, "-", "")
		sec, err := argo.Dynamic().Resource(secrets).Namespace("argocd").Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ArgoCD Secret %s: %v", name, err)
		}
		labels := sec.GetLabels()
		if labels["argocd.argoproj.io/secret-type"] != "cluster" || labels["k8s.waldur.com/longhorn-enabled"] != "true" {
			t.Errorf("labels %v", labels)
		}
		data, _, _ := unstructured.NestedStringMap(sec.Object, "data")
		server, _ := base64.StdEncoding.DecodeString(data["server"])
		if name, _ := base64.StdEncoding.DecodeString(data["name"]); string(name) != "k8s-argo-up" || !strings.Contains(string(server), "/k8s/clusters/") {
			t.Errorf("Secret data name %q server %q", name, server)
		}
	})
	t.Run("with ArgoCD down the create finishes and keeps its cluster", func(t *testing.T) {
		if err := argo.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: "argo-down", Attributes: oneZone("argo-down")})
		if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
			t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
		}
		res, err := s.Admin.Resource(ctx(t), resUUID)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := res.BackendMetadata["argocd_error"].(string); !strings.Contains(e, "connect") {
			t.Errorf("backend_metadata argocd_error %q, want the connection's error", e)
		}
		if _, ok := s.Rancher.ProvisioningClusterNamed("k8s-argo-down"); !ok {
			t.Error("the cluster was undone")
		}
		if n := len(s.OpenStack.ServersNamed("k8s-lb-argo-down")); n != 1 {
			t.Errorf("%d load balancers of the cluster, want 1", n)
		}
	})
}
