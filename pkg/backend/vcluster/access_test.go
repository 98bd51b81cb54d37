package vcluster

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/fault"
)

// The member source's settings: role_mapping is merged over the source's
// defaults, "" excludes a role, and what cannot name a Rancher role
// template is refused with its key.
func TestMemberSourceSettings(t *testing.T) {
	tests := map[string]struct {
		raw     map[string]any
		want    map[string]string
		roles   []string
		wantErr string
	}{
		"waldur_team is the default, with rancher-cluster's mapping": {
			raw:   importSettings(),
			want:  map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"},
			roles: []string{"cluster-owner", "cluster-member"},
		},
		"an override and an exclusion are merged over the defaults": {
			raw:   with(importSettings(), "role_mapping", map[string]any{"PROJECT.MANAGER": "", "PROJECT.MEMBER": "projects-view"}),
			want:  map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "", "PROJECT.MEMBER": "projects-view"},
			roles: []string{"cluster-owner", "projects-view"},
		},
		"rancher_project maps project roles": {
			raw: with(importSettings(), "member_source", "rancher_project", "rancher_project_id", "p-abc",
				"role_mapping", map[string]any{"read-only": "projects-view", "project-member": ""}),
			want:  map[string]string{"project-owner": "cluster-owner", "project-member": "", "read-only": "projects-view"},
			roles: []string{"cluster-owner", "projects-view"},
		},
		"rancher_project needs a project": {
			raw: with(importSettings(), "member_source", "rancher_project"), wantErr: "backend_settings.member_source: rancher_project needs rancher_project_id or rancher_project_map",
		},
		"rancher_project takes its projects from rancher_project_map alone": {
			raw:   with(importSettings(), "member_source", "rancher_project", "rancher_project_map", map[string]any{"0123456789abcdef0123456789abcdef": "p-a"}),
			want:  map[string]string{"project-owner": "cluster-owner", "project-member": "cluster-member"},
			roles: []string{"cluster-owner", "cluster-member"},
		},
		"an unknown source": {
			raw: with(importSettings(), "member_source", "ldap"), wantErr: `backend_settings.member_source: "ldap" is not a member source`,
		},
		"a cluster role that is no role template id": {
			raw:     with(importSettings(), "role_mapping", map[string]any{"PROJECT.MEMBER": "Cluster Member"}),
			wantErr: `backend_settings.role_mapping.PROJECT.MEMBER: "Cluster Member" is not a Rancher cluster role template id`,
		},
		"a project role that is no role template id": {
			raw: with(importSettings(), "member_source", "rancher_project", "rancher_project_id", "p-abc",
				"role_mapping", map[string]any{"PROJECT.MEMBER": "cluster-member"}),
			wantErr: `backend_settings.role_mapping.PROJECT.MEMBER: "PROJECT.MEMBER" is not a Rancher project role template id`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(tc.raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(s.RoleMapping, tc.want) {
				t.Errorf("mapping %v, want %v", s.RoleMapping, tc.want)
			}
			if got := s.ClusterRoles(); !slices.Equal(got, tc.roles) {
				t.Errorf("cluster roles %v, want %v", got, tc.roles)
			}
		})
	}
}

const (
	resUUID   = "0a0a0a0a0a0a4a0a8a0a0a0a0a0a0a0a"
	otherUUID = "0b0b0b0b0b0b4b0b8b0b0b0b0b0b0b0b"
)

// fakeRancher is Rancher's bindings of one project and one imported
// cluster vc-demo, owned by resUUID.
type fakeRancher struct {
	project  []rancher.RoleBinding
	cluster  []rancher.RoleBinding
	missing  bool // no such cluster (not imported)
	next     int
	projects []string
}

func (f *fakeRancher) ProjectRoleBindings(_ context.Context, projectID string) ([]rancher.RoleBinding, error) {
	f.projects = append(f.projects, projectID)
	return f.project, nil
}

func (f *fakeRancher) check(ref rancher.ClusterRef) error {
	switch {
	case f.missing:
		return backend.ErrNotFound
	case ref.Name != "vc-demo" || ref.ResourceUUID != resUUID:
		return fault.Errorf(fault.NotManaged, "cluster %s is not %s's", ref.Name, ref.ResourceUUID)
	}
	return nil
}

func (f *fakeRancher) ClusterRoleBindings(_ context.Context, ref rancher.ClusterRef) ([]rancher.RoleBinding, error) {
	return slices.Clone(f.cluster), f.check(ref)
}

func (f *fakeRancher) CreateClusterRoleBinding(_ context.Context, ref rancher.ClusterRef, b rancher.RoleBinding) (bool, error) {
	if err := f.check(ref); err != nil {
		return false, err
	}
	f.next++
	b.ID = "c-m-1:crtb-" + string(rune('a'+f.next))
	b.Annotations = map[string]string{rancher.AnnotationManaged: "true", rancher.AnnotationResourceUUID: ref.ResourceUUID}
	f.cluster = append(f.cluster, b)
	return true, nil
}

func (f *fakeRancher) DeleteClusterRoleBinding(_ context.Context, ref rancher.ClusterRef, id string) error {
	if err := f.check(ref); err != nil {
		return err
	}
	i := slices.IndexFunc(f.cluster, func(b rancher.RoleBinding) bool { return b.ID == id })
	if i < 0 {
		return nil
	}
	if !f.cluster[i].OwnedBy(ref.ResourceUUID) {
		return errors.New("deleted a binding that is not sitebus's")
	}
	f.cluster = slices.Delete(f.cluster, i, i+1)
	return nil
}

// bindings lists the cluster's bindings as "role subject", sorted.
func (f *fakeRancher) bindings() []string {
	var out []string
	for _, b := range f.cluster {
		out = append(out, b.RoleTemplateID+" "+b.Subject())
	}
	slices.Sort(out)
	return out
}

func marked(id, role string, subject rancher.RoleBinding) rancher.RoleBinding {
	subject.ID, subject.RoleTemplateID = id, role
	subject.Annotations = map[string]string{rancher.AnnotationManaged: "true", rancher.AnnotationResourceUUID: resUUID}
	return subject
}

var (
	creator = rancher.RoleBinding{ID: "c-m-1:creator-cluster-owner", RoleTemplateID: "cluster-owner", UserID: "user-admin", UserPrincipalID: "local://user-admin"}
	foreign = rancher.RoleBinding{ID: "c-m-1:crtb-hand", RoleTemplateID: "cluster-member", UserPrincipalID: "keycloakoidc_user://zed"}
	// foreignSame binds by hand what the source also wants: it counts as
	// bound, and is never removed.
	foreignSame = rancher.RoleBinding{ID: "c-m-1:crtb-hand2", RoleTemplateID: "cluster-member", GroupPrincipalID: "keycloakoidc_group://devs"}
	// otherResource's marks are another resource's: not this sync's.
	otherResource = rancher.RoleBinding{ID: "c-m-1:crtb-other", RoleTemplateID: "cluster-owner", GroupPrincipalID: "keycloakoidc_group://ops",
		Annotations: map[string]string{rancher.AnnotationManaged: "true", rancher.AnnotationResourceUUID: otherUUID}}
)

func TestAccessKeepsTheClusterBindingsOfTheMemberSource(t *testing.T) {
	group := func(g string) rancher.RoleBinding {
		return rancher.RoleBinding{GroupPrincipalID: "keycloakoidc_group://" + g}
	}
	user := func(p string) rancher.RoleBinding {
		return rancher.RoleBinding{UserID: "u-" + p, UserPrincipalID: "keycloakoidc_user://" + p}
	}
	prtb := func(role string, subject rancher.RoleBinding) rancher.RoleBinding {
		subject.RoleTemplateID = role
		return subject
	}
	owner, member := "c_"+resUUID+"_cluster-owner", "c_"+resUUID+"_cluster-member"
	tests := map[string]struct {
		raw     map[string]any
		project []rancher.RoleBinding
		cluster []rancher.RoleBinding
		want    []string
		added   int
		removed int
	}{
		"waldur_team: each role group is bound with its role; the creator's and foreign bindings stay": {
			raw:     importSettings(),
			cluster: []rancher.RoleBinding{creator, foreign},
			want: []string{"cluster-member keycloakoidc_group://" + member, "cluster-member keycloakoidc_user://zed",
				"cluster-owner keycloakoidc_group://" + owner, "cluster-owner local://user-admin"},
			added: 2,
		},
		"waldur_team: a role no longer mapped loses its marked binding; an excluded role is bound to nothing": {
			raw: with(importSettings(), "role_mapping", map[string]any{"PROJECT.MEMBER": ""}),
			cluster: []rancher.RoleBinding{creator, marked("c-m-1:crtb-o", "cluster-owner", group(owner)),
				marked("c-m-1:crtb-m", "cluster-member", group(member))},
			want:    []string{"cluster-owner keycloakoidc_group://" + owner, "cluster-owner local://user-admin"},
			removed: 1,
		},
		"rancher_project: users and groups by mapped role; excluded and unmapped roles get nothing": {
			raw: with(importSettings(), "member_source", "rancher_project", "rancher_project_id", "p-demo",
				"role_mapping", map[string]any{"read-only": ""}),
			project: []rancher.RoleBinding{prtb("project-owner", user("alice")), prtb("project-member", group("devs")),
				prtb("read-only", user("bob")), prtb("custom-role", user("carol")), prtb("project-member", user("dan"))},
			cluster: []rancher.RoleBinding{creator, foreign},
			want: []string{"cluster-member keycloakoidc_group://devs", "cluster-member keycloakoidc_user://dan", "cluster-member keycloakoidc_user://zed",
				"cluster-owner keycloakoidc_user://alice", "cluster-owner local://user-admin"},
			added: 3,
		},
		"rancher_project: a role change rebinds, a member gone is unbound; foreign and other resources' bindings stay": {
			raw: with(importSettings(), "member_source", "rancher_project", "rancher_project_id", "p-demo"),
			project: []rancher.RoleBinding{prtb("project-owner", user("dan")), prtb("project-member", group("devs")),
				// Rancher's creator binding of the project is the creator's
				// cluster-owner binding already: nothing to add.
				prtb("project-owner", rancher.RoleBinding{UserID: "user-admin", UserPrincipalID: "local://user-admin"})},
			cluster: []rancher.RoleBinding{creator, foreignSame, otherResource,
				marked("c-m-1:crtb-1", "cluster-member", user("dan")), marked("c-m-1:crtb-2", "cluster-owner", user("alice"))},
			want: []string{"cluster-member keycloakoidc_group://devs", "cluster-owner keycloakoidc_group://ops",
				"cluster-owner keycloakoidc_user://dan", "cluster-owner local://user-admin"},
			added: 1, removed: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeRancher{project: tc.project, cluster: slices.Clone(tc.cluster)}
			a := &Access{Settings: s, Rancher: f}
			added, removed, err := a.Sync(context.Background(), resUUID, "vc-demo")
			if err != nil {
				t.Fatal(err)
			}
			if added != tc.added || removed != tc.removed {
				t.Errorf("added %d removed %d, want %d and %d", added, removed, tc.added, tc.removed)
			}
			if got := f.bindings(); !slices.Equal(got, tc.want) {
				t.Errorf("bindings\n%v\nwant\n%v", got, tc.want)
			}
			// Desired state: a second sync changes nothing.
			if added, removed, err := a.Sync(context.Background(), resUUID, "vc-demo"); err != nil || added+removed != 0 {
				t.Errorf("second sync: added %d removed %d err %v, want no change", added, removed, err)
			}
			if s.MemberSource == MemberSourceRancherProject && (len(f.projects) == 0 || f.projects[0] != "c-m-host1:p-demo") {
				t.Errorf("project bindings read of %v, want c-m-host1:p-demo", f.projects)
			}
		})
	}
}

// With a project reader (the host namespace's annotation), the members
// are those of the project the namespace is in, not rancher_project_id's;
// a namespace in no project has no members to bind.
func TestAccessReadsTheProjectOfTheNamespace(t *testing.T) {
	for name, tc := range map[string]struct {
		project string
		want    []string
	}{
		"the namespace's project":             {project: "c-m-host1:p-mapped", want: []string{"c-m-host1:p-mapped"}},
		"a namespace in no project: no reads": {project: ""},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(with(importSettings(), "member_source", "rancher_project", "rancher_project_id", "p-demo"))
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeRancher{}
			var asked string
			a := &Access{Settings: s, Rancher: f, Project: func(_ context.Context, ns string) (string, error) { asked = ns; return tc.project, nil }}
			if _, _, err := a.Sync(context.Background(), resUUID, "vc-demo"); err != nil {
				t.Fatal(err)
			}
			if asked != "vc-demo" || !slices.Equal(f.projects, tc.want) {
				t.Errorf("asked for %q, project bindings read of %v, want vc-demo and %v", asked, f.projects, tc.want)
			}
		})
	}
}

func TestAccessOfAClusterNotImportedDoesNothingAndAForeignOneFails(t *testing.T) {
	s, err := DecodeSettings(importSettings())
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRancher{missing: true}
	if added, removed, err := (&Access{Settings: s, Rancher: f}).Sync(context.Background(), resUUID, "vc-demo"); err != nil || added+removed != 0 {
		t.Errorf("not imported: added %d removed %d err %v, want nothing", added, removed, err)
	}
	f = &fakeRancher{}
	_, _, err = (&Access{Settings: s, Rancher: f}).Sync(context.Background(), otherUUID, "vc-demo")
	if !fault.IsTerminal(err) || len(f.cluster) != 0 {
		t.Errorf("another resource's cluster: err %v, bindings %v; want a terminal error and nothing made", err, f.cluster)
	}
}
