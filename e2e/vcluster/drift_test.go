package vcluster_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// A role group's cluster binding deleted by hand, a member taken out of a
// role group by hand and the host namespace's LimitRange deleted:
// `sitebus drift` lists each and exits 1, changing nothing; `--repair`
// puts each back (the first two through the membership service).
// A binding made by hand is never listed or removed.
func TestDriftReportsAndRepairsTheVirtualClusterBindingsAndRoleGroups(t *testing.T) {
	// Only drift may repair: no membership pass, only team events.
	e := newEnvWith(t, "drift", []envOption{withMembers(map[string]any{"role_mapping": map[string]any{"PROJECT.MANAGER": ""}})},
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"membership_sync_period": "24h"}}))
	e.bringKubeconfig(t)
	resUUID, clusterID := e.createWithTeam(harness.Member("alice01", "PROJECT.ADMIN"), harness.Member("bob01", "PROJECT.MEMBER"))
	// The create's members step has synced the members and bindings
	// before the order was done; no other sync runs until the edits by
	// hand below (the membership period is 24h), so they stay drifted.
	hex := hexOf(resUUID)
	owner, member := "c_"+hex+"_cluster-owner", "c_"+hex+"_cluster-member"
	creator := "cluster-owner local://" + e.Rancher.Options().UserID
	bound := []string{creator, "cluster-owner keycloakoidc_group://" + owner + " *", "cluster-member keycloakoidc_group://" + member + " *"}
	e.waitGroups(resUUID, []string{"alice01"}, []string{"bob01"})
	e.waitBindings(clusterID, resUUID, bound...)

	e.rancherCall(http.MethodPost, "/v3/clusterroletemplatebindings", map[string]any{"type": "clusterRoleTemplateBinding",
		"clusterId": clusterID, "roleTemplateId": "cluster-member", "userPrincipalId": "keycloakoidc_user://zed"})
	foreign := "cluster-member keycloakoidc_user://zed"
	for _, b := range e.Rancher.Inventory().ClusterBindings {
		if b.ClusterID == clusterID && b.GroupPrincipalID == rancher.GroupPrincipalID(owner) {
			e.rancherCall(http.MethodDelete, "/v3/clusterroletemplatebindings/"+b.ID, nil)
		}
	}
	g, ok := e.Keycloak.GroupByPath("waldur", "/c_"+hex+"/"+member)
	if !ok {
		t.Fatalf("no group %s", member)
	}
	if err := e.Keycloak.RemoveMember("waldur", g.ID, "bob01"); err != nil {
		t.Fatal(err)
	}
	if err := e.hostCS.CoreV1().LimitRanges(e.ns()).Delete(harness.Context(t, time.Minute), vcluster.LimitRangeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drifted := []string{creator, foreign, "cluster-member keycloakoidc_group://" + member + " *"}
	e.waitBindings(clusterID, resUUID, drifted...)

	out, code := e.Command(t, "drift")
	if code != 1 {
		t.Fatalf("drift exit %d, want 1 (drift left):\n%s", code, out)
	}
	for _, says := range []string{"bindings", owner + " bound as cluster-owner", "members", "bob01 is a member",
		"limits   " + e.ns() + "/limitrange/" + vcluster.LimitRangeName, "Nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("drift output lacks %q:\n%s", says, out)
		}
	}
	if strings.Contains(out, "zed") {
		t.Errorf("drift lists the binding made by hand:\n%s", out)
	}
	e.waitBindings(clusterID, resUUID, drifted...)
	if m, _ := e.groupMembers(resUUID, "cluster-member"); len(m) != 0 {
		t.Fatalf("drift without --repair changed the member group: %v", m)
	}

	out, code = e.Command(t, "drift", "--repair", "--nats-url", e.Sitebus.NATSURL)
	if code != 0 {
		t.Fatalf("drift --repair exit %d, want 0:\n%s", code, out)
	}
	e.waitGroups(resUUID, []string{"alice01"}, []string{"bob01"})
	e.waitBindings(clusterID, resUUID, append(bound, foreign)...)
	if _, err := e.hostCS.CoreV1().LimitRanges(e.ns()).Get(harness.Context(t, time.Minute), vcluster.LimitRangeName, metav1.GetOptions{}); err != nil {
		t.Errorf("after --repair the host namespace's LimitRange: %v", err)
	}
	if out, code = e.Command(t, "drift"); code != 0 {
		t.Errorf("drift after the repair exit %d, want 0:\n%s", code, out)
	}
}
