package vcluster_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
)

// kcAdminPassword is the Keycloak simulator's admin password.
const kcAdminPassword = "kc-admin"

// withMembers makes vcluster the membership_sync_backend with settings
// (member_source, role_mapping) and a membership pass each second.
func withMembers(settings map[string]any) envOption {
	return func(e *env) { e.members = settings }
}

// newMembersEnv is the site of a vcluster offering whose membership is
// synced, with Keycloak holding the fixture's users.
func newMembersEnv(t *testing.T, slug string, settings map[string]any) *env {
	t.Helper()
	return newEnvWith(t, slug, []envOption{withMembers(settings)}, harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"membership_sync_period": "1s"}}))
}

// createWithTeam creates the test's virtual cluster with team set before
// the order is delivered; it returns the resource's UUID and its v3
// cluster id.
func (e *env) createWithTeam(team ...waldursim.TeamMember) (resUUID, clusterID string) {
	e.t.Helper()
	req := e.create()
	req.Silent = true
	orderUUID, resUUID := e.Order(req)
	for _, m := range team {
		if _, err := e.Admin.SetTeam(harness.Context(e.t, time.Minute), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: true, Silent: true}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.Deliver(orderUUID)
	if o := e.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		e.t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	pc, ok := e.Rancher.ProvisioningClusterNamed(e.ns())
	if !ok || pc.ClusterID == "" {
		e.t.Fatalf("no imported cluster %s", e.ns())
	}
	return resUUID, pc.ClusterID
}

// team changes one member's role (granted) or takes them out, telling
// sitebus as Waldur does.
func (e *env) team(resUUID string, m waldursim.TeamMember, granted bool) {
	e.t.Helper()
	if _, err := e.Admin.SetTeam(harness.Context(e.t, time.Minute), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: granted}); err != nil {
		e.t.Fatal(err)
	}
}

// rancherCall is a call to the Rancher simulator's API with the offering's
// key, as a person or Rancher's UI makes it; it returns the object's id.
func (e *env) rancherCall(method, path string, body map[string]any) string {
	e.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(harness.Context(e.t, time.Minute), method, e.Rancher.URL()+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	ro := e.Rancher.Options()
	req.SetBasicAuth(ro.AccessKey, ro.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		e.t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
	return out.ID
}

// bindings are the cluster's role template bindings as "role subject",
// sorted; a binding sitebus marked as its own for resUUID ends in " *".
func (e *env) bindings(clusterID, resUUID string) []string {
	var out []string
	for _, b := range e.Rancher.Inventory().ClusterBindings {
		if b.ClusterID != clusterID {
			continue
		}
		s := b.RoleTemplateID + " " + cmpOr(b.GroupPrincipalID, b.UserPrincipalID, b.UserID)
		if b.Annotations[rancher.AnnotationManaged] == "true" && hexOf(b.Annotations[rancher.AnnotationResourceUUID]) == hexOf(resUUID) {
			s += " *"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func cmpOr(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// waitBindings waits until the cluster's bindings are want.
func (e *env) waitBindings(clusterID, resUUID string, want ...string) {
	e.t.Helper()
	slices.Sort(want)
	var got []string
	harness.Eventually(e.t, time.Minute, "cluster bindings "+strings.Join(want, ", "), func() bool {
		got = e.bindings(clusterID, resUUID)
		return slices.Equal(got, want)
	})
}

// groupMembers are the usernames of the resource's role group
// c_<hex>_<role> under c_<hex>, sorted; ok is false without the group.
func (e *env) groupMembers(resUUID, role string) (members []string, ok bool) {
	hex := hexOf(resUUID)
	g, ok := e.Keycloak.GroupByPath("waldur", "/c_"+hex+"/c_"+hex+"_"+role)
	if !ok {
		return nil, false
	}
	m := e.Keycloak.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m, true
}

// waitGroups waits until the owner and member groups hold exactly owners
// and members.
func (e *env) waitGroups(resUUID string, owners, members []string) {
	e.t.Helper()
	harness.Eventually(e.t, time.Minute, "groups owners "+strings.Join(owners, ",")+" members "+strings.Join(members, ","), func() bool {
		o, ok1 := e.groupMembers(resUUID, "cluster-owner")
		m, ok2 := e.groupMembers(resUUID, "cluster-member")
		return ok1 && ok2 && slices.Equal(o, owners) && slices.Equal(m, members)
	})
}

// The Waldur team is the virtual cluster's access: each member goes into
// the cluster's role group by role_mapping (project managers excluded
// here), each group is bound to the imported cluster with its role, a role
// change moves the user and a user who leaves leaves the group. Rancher's
// creator binding and a binding made by hand are kept.
func TestWaldurTeamIsBoundToTheVirtualClusterThroughRoleGroups(t *testing.T) {
	e := newMembersEnv(t, "team", map[string]any{"role_mapping": map[string]any{"PROJECT.MANAGER": ""}})
	e.bringKubeconfig(t)
	resUUID, clusterID := e.createWithTeam(harness.Member("alice01", "PROJECT.ADMIN"), harness.Member("bob01", "PROJECT.MEMBER"),
		harness.Member("carol01", "PROJECT.MANAGER"))
	// Someone binds a user by hand: not sitebus's, so never removed.
	e.rancherCall(http.MethodPost, "/v3/clusterroletemplatebindings", map[string]any{"type": "clusterRoleTemplateBinding",
		"clusterId": clusterID, "roleTemplateId": "cluster-member", "userPrincipalId": "keycloakoidc_user://zed"})
	hex := hexOf(resUUID)
	creator := "cluster-owner local://" + e.Rancher.Options().UserID
	foreign := "cluster-member keycloakoidc_user://zed"

	t.Run("the team lands in the groups of its roles, an excluded role in none; each group is bound with its role", func(t *testing.T) {
		e.waitGroups(resUUID, []string{"alice01"}, []string{"bob01"})
		e.waitBindings(clusterID, resUUID, creator, foreign,
			"cluster-owner keycloakoidc_group://c_"+hex+"_cluster-owner *", "cluster-member keycloakoidc_group://c_"+hex+"_cluster-member *")
	})
	t.Run("a role change moves the user", func(t *testing.T) {
		e.team(resUUID, harness.Member("bob01", "PROJECT.ADMIN"), true)
		e.waitGroups(resUUID, []string{"alice01", "bob01"}, nil)
	})
	t.Run("a user who leaves the team leaves the group; the bindings stay as they were", func(t *testing.T) {
		e.team(resUUID, harness.Member("alice01", "PROJECT.ADMIN"), false)
		e.waitGroups(resUUID, []string{"bob01"}, nil)
		e.waitBindings(clusterID, resUUID, creator, foreign,
			"cluster-owner keycloakoidc_group://c_"+hex+"_cluster-owner *", "cluster-member keycloakoidc_group://c_"+hex+"_cluster-member *")
	})
}

// With member_source rancher_project the Rancher project's users and
// groups are the virtual cluster's members: each project binding whose
// role maps to a cluster role becomes a cluster binding (read-only
// excluded here); a role change rebinds, a member taken out of the project
// is unbound, and Rancher's creator binding and one made by hand stay.
func TestRancherProjectMembersAreBoundToTheVirtualCluster(t *testing.T) {
	e := newMembersEnv(t, "project", map[string]any{"member_source": "rancher_project", "role_mapping": map[string]any{"read-only": ""}})
	ro := e.Rancher.Options()
	project, err := e.Rancher.AddProject(ranchersim.Project{ID: ro.ClusterID + ":p-demo", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	prtb := func(role, kind, principal string) string {
		return e.rancherCall(http.MethodPost, "/v3/projectroletemplatebindings", map[string]any{"type": "projectRoleTemplateBinding",
			"projectId": project.ID, "roleTemplateId": role, kind: principal})
	}
	alice := prtb("project-owner", "userPrincipalId", "keycloakoidc_user://alice")
	devs := prtb("project-member", "groupPrincipalId", "keycloakoidc_group://devs")
	prtb("read-only", "userPrincipalId", "keycloakoidc_user://bob")
	e.bringKubeconfig(t)
	resUUID, clusterID := e.createWithTeam()
	e.rancherCall(http.MethodPost, "/v3/clusterroletemplatebindings", map[string]any{"type": "clusterRoleTemplateBinding",
		"clusterId": clusterID, "roleTemplateId": "cluster-member", "userPrincipalId": "keycloakoidc_user://zed"})
	creator := "cluster-owner local://" + ro.UserID
	foreign := "cluster-member keycloakoidc_user://zed"

	t.Run("the project's user and group are bound by their mapped roles, an excluded role to nothing", func(t *testing.T) {
		e.waitBindings(clusterID, resUUID, creator, foreign,
			"cluster-owner keycloakoidc_user://alice *", "cluster-member keycloakoidc_group://devs *")
	})
	t.Run("a role change rebinds the user", func(t *testing.T) {
		e.rancherCall(http.MethodDelete, "/v3/projectroletemplatebindings/"+alice, nil)
		prtb("project-member", "userPrincipalId", "keycloakoidc_user://alice")
		e.waitBindings(clusterID, resUUID, creator, foreign,
			"cluster-member keycloakoidc_user://alice *", "cluster-member keycloakoidc_group://devs *")
	})
	t.Run("a group taken out of the project is unbound; the creator's and the foreign binding stay", func(t *testing.T) {
		e.rancherCall(http.MethodDelete, "/v3/projectroletemplatebindings/"+devs, nil)
		e.waitBindings(clusterID, resUUID, creator, foreign, "cluster-member keycloakoidc_user://alice *")
	})
}
