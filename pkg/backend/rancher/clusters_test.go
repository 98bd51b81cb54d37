package rancher

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestClusterPayload pins the v1 create body of Mastermind's managed
// Rancher (its test_create_private_cluster) key for key and in its order, plus
// sitebus's ownership annotations.
func TestClusterPayload(t *testing.T) {
	const uuid = "0b5b9e0c-2c7e-4b55-9f55-5d9a4e8f0c11"
	tests := []struct {
		name   string
		spec   ClusterSpec
		secret string
		want   string
	}{
		{"with a private registry: the system default registry and the auth secret", ClusterSpec{Name: "k8s-a", ResourceUUID: uuid,
			KubernetesVersion: "v1.33.0+rke2r1", Registry: &Registry{URL: "example.com", Username: "user", Password: "1234"}},
			"registryconfig-auth-abc", `{"type":"provisioning.cattle.io.cluster",
 "metadata":{"name":"k8s-a","namespace":"fleet-default","annotations":{"sitebus.io/resource-uuid":"` + uuid + `","waldur/managed":"true"}},
 "spec":{"kubernetesVersion":"v1.33.0+rke2r1","rkeConfig":{
  "chartValues":{"rke2-cilium":{}},
  "dataDirectories":{"systemAgent":"/opt/rke2_storage/agent","provisioning":"/opt/rke2_storage/provisioning","k8sDistro":"/opt/rke2_storage/rke2"},
  "machineGlobalConfig":{"cni":"cilium","disable-kube-proxy":false,"etcd-expose-metrics":false},
  "machineSelectorConfig":[{"config":{"protect-kernel-defaults":false,"system-default-registry":"example.com"}}],
  "registries":{"configs":{"example.com":{"authConfigSecretName":"registryconfig-auth-abc","caBundle":null,"insecureSkipVerify":false,"tlsSecretName":null}},"mirrors":{}}}}}`},
		{"without one: no registry parts, the default Kubernetes version", ClusterSpec{Name: "k8s-b", ResourceUUID: uuid}, "",
			`{"type":"provisioning.cattle.io.cluster",
 "metadata":{"name":"k8s-b","namespace":"fleet-default","annotations":{"sitebus.io/resource-uuid":"` + uuid + `","waldur/managed":"true"}},
 "spec":{"kubernetesVersion":"v1.31.7+rke2r1","rkeConfig":{
  "chartValues":{"rke2-cilium":{}},
  "dataDirectories":{"systemAgent":"/opt/rke2_storage/agent","provisioning":"/opt/rke2_storage/provisioning","k8sDistro":"/opt/rke2_storage/rke2"},
  "machineGlobalConfig":{"cni":"cilium","disable-kube-proxy":false,"etcd-expose-metrics":false},
  "machineSelectorConfig":[{"config":{"protect-kernel-defaults":false}}]}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(ClusterPayload(tc.spec, tc.secret))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tc.want)); err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("payload\n got %s\nwant %s", got, want.String())
			}
		})
	}
}

func TestClusterSpecValidation(t *testing.T) {
	const uuid = "0b5b9e0c-2c7e-4b55-9f55-5d9a4e8f0c11"
	tests := []struct {
		name string
		spec ClusterSpec
		ok   bool
	}{
		{"a plain spec", ClusterSpec{Name: "k8s-a", ResourceUUID: uuid}, true},
		{"a complete registry", ClusterSpec{Name: "k8s-a", ResourceUUID: uuid, Registry: &Registry{URL: "r.example.com", Username: "u", Password: "p"}}, true},
		{"an upper-case name", ClusterSpec{Name: "K8s-a", ResourceUUID: uuid}, false},
		{"a name over 63 characters", ClusterSpec{Name: "k" + string(bytes.Repeat([]byte("8"), 63)), ResourceUUID: uuid}, false},
		{"no resource", ClusterSpec{Name: "k8s-a"}, false},
		{"a registry without a password", ClusterSpec{Name: "k8s-a", ResourceUUID: uuid, Registry: &Registry{URL: "r", Username: "u"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spec.validate(); (err == nil) != tc.ok {
				t.Errorf("validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
