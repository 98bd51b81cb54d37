package provisioner

import (
	"testing"
)

func TestLoadBalancerUserDataGetsTheSubnetsFirstOctets(t *testing.T) {
	tests := map[string]struct{ tmpl, ip, want string }{
		"the placeholder is the subnet's": {"upstream {subnet_3_oct}.11:6443", "192.168.43.10", "upstream 192.168.43.11:6443"},
		"every occurrence":                {"{subnet_3_oct}.1 {subnet_3_oct}.2", "10.0.0.10", "10.0.0.1 10.0.0.2"},
		"no template, no user data":       {"", "10.0.0.10", ""},
		"no address leaves it as it is":   {"a {subnet_3_oct}", "", "a {subnet_3_oct}"},
		"other braces are the template's": {"x {other} {subnet_3_oct}", "10.1.2.10", "x {other} 10.1.2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := string(lbUserData(tc.tmpl, tc.ip)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClusterSecretDataIsWhatArgoCDReads(t *testing.T) {
	kc := "clusters:\n- name: k8s-a\n  cluster: {server: https://r/k8s/clusters/c-m-1}\nusers:\n- name: u\n  user: {token: t0k}\n"
	got, err := clusterSecretData(kc)
	if err != nil {
		t.Fatal(err)
	}
	if got["name"] != "k8s-a" || got["server"] != "https://r/k8s/clusters/c-m-1" || got["config"] != `{"bearerToken":"t0k"}` {
		t.Errorf("data %v", got)
	}
	if _, err := clusterSecretData("clusters: []\n"); err == nil {
		t.Error("a kubeconfig without a cluster was accepted")
	}
}
