package ranchercluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestPlanCreateReadsTheOrderAsTheOfferingsModeDoes(t *testing.T) {
	tests := map[string]struct {
		settings map[string]any
		order    json.RawMessage
		mode     string
		nodes    int
		err      string
	}{
		"a managed offering plans a managed order": {
			settings: managedRaw(), order: managedOrder("abc"), mode: ModeManaged, nodes: 15,
		},
		"a self-managed offering plans a self-managed order": {
			settings: selfManagedRaw(), order: selfManagedOrder(nil), mode: ModeSelfManaged, nodes: 2,
		},
		"a managed offering refuses a self-managed order's attributes": {
			settings: managedRaw(), order: selfManagedOrder(nil),
			err: "worker_nodes_count: This field is required.\nworker_nodes_flavor_name: This field is required.\n" +
				"worker_nodes_data_volume_size: This field is required.",
		},
		"read-only mode refuses before reading the attributes": {
			settings: managedRaw("read_only_mode", true), order: json.RawMessage(`"garbage"`),
			err: "Rancher integration is in read-only mode.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := PlanCreate(context.Background(), mustSettings(t, tc.settings), tc.order, resource, newCatalog())
			if tc.err != "" {
				wantTerminal(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != tc.mode || len(p.Nodes) != tc.nodes {
				t.Errorf("mode %s with %d nodes", p.Mode, len(p.Nodes))
			}
		})
	}
}

func TestSettingsPrintNoSecret(t *testing.T) {
	s := mustSettings(t, managedRaw("vault_host", "vault.example.com", "vault_token", "hvs.x",
		"private_registry_url", "registry.example.com", "private_registry_user", "u", "private_registry_password", "reg-s3cret",
		"argocd_k8s_kubeconfig", "apiVersion: v1\nusers: [{user: {token: argo-s3cret}}]\n", "argocd_k8s_namespace", "argocd"))
	out := fmt.Sprintf("%+v %#v", *s, *s)
	for _, secret := range []string{"s3cret-key", "ac-s3cret", "hvs.x", "reg-s3cret", "argo-s3cret"} {
		if strings.Contains(out, secret) {
			t.Errorf("printed settings hold %q", secret)
		}
	}
}
