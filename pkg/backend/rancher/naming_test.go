package rancher

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

func TestProjectName(t *testing.T) {
	tests := map[string]struct {
		prefix string
		r      backend.Resource
		want   string
	}{
		"prefix and slug":                     {"waldur-", backend.Resource{Slug: "proj1"}, "waldur-proj1"},
		"an empty prefix is the slug alone":   {"", backend.Resource{Slug: "proj1"}, "proj1"},
		"no slug: resource- and the UUID's 8": {"waldur-", backend.Resource{UUID: "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"}, "waldur-resource-1a2b3c4d"},
		"no slug, a hex UUID, upper case":     {"waldur-", backend.Resource{UUID: "1A2B3C4D5E6F708192A3B4C5D6E7F809"}, "waldur-resource-1a2b3c4d"},
		"63 characters fit":                   {"", backend.Resource{Slug: strings.Repeat("a", 63)}, strings.Repeat("a", 63)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ProjectName(tc.prefix, tc.r)
			if err != nil || got != tc.want {
				t.Errorf("ProjectName = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// A slug that cannot name a namespace is refused, naming the slug; it is
// never rewritten into another name.
func TestProjectNameRefusesInvalidSlugs(t *testing.T) {
	for _, slug := range []string{"Upper", "under_score", "dot.ted", "trailing-", "sp ace", strings.Repeat("a", 57)} {
		name, err := ProjectName("waldur-", backend.Resource{Slug: slug, UUID: "1a2b3c4d"})
		if !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), `"`+slug+`"`) {
			t.Errorf("ProjectName(%q) = %q, %v; want a terminal ErrInvalid naming the slug", slug, name, err)
		}
	}
}

func TestBackendIDRefusesMissingSlugsWithPythonsMessage(t *testing.T) {
	b, err := New(Settings{BackendURL: "https://r.example.org", ClusterID: "c-1", ProjectPrefix: "waldur-", DefaultRole: "r"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.BackendID(backend.Resource{UUID: "u1", Slug: "s", CustomerSlug: "", ProjectSlug: "p"})
	want := "Resource u1 has unset or missing slug fields. customer_slug: None, project_slug: p. " +
		"Cannot create Rancher projects with invalid slug values."
	if !errors.Is(err, backend.ErrInvalid) || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if id, err := b.BackendID(backend.Resource{UUID: "u1", Slug: "s", CustomerSlug: "c", ProjectSlug: "p"}); err != nil || id != "waldur-s" {
		t.Errorf("BackendID = %q, %v", id, err)
	}
}

func TestGroupNaming(t *testing.T) {
	tests := []struct{ got, want string }{
		{ParentGroupName("c-m-test:p-test"), "c_cmtestpt"},
		{ParentGroupName("c-j8276"), "c_cj8276"},
		{ParentGroupName("local"), "c_local"},
		{ParentGroupDescription("c-m-test"), "Cluster access group for c-m-test"},
		{ChildGroupName("proj1", "workloads-manage"), "project_proj1_workloads-manage"},
		{ChildGroupName("", "workloads-manage"), "project_unknown-project_workloads-manage"},
		{ChildGroupDescription("proj1", "workloads-manage"), "Project proj1 members with role workloads-manage"},
		{ChildGroupDescription("", "workloads-manage"), "Project None members with role workloads-manage"},
		{GroupPrincipalID("project_proj1_workloads-manage"), "keycloakoidc_group://project_proj1_workloads-manage"},
		{ProjectDescription(backend.Resource{Name: "My env", CustomerName: "ACME", CustomerSlug: "acme", ProjectName: "", ProjectSlug: "web"}),
			"My env (Customer: ACME, Project: web)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
