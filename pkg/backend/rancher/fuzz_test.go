package rancher

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzProjectName feeds the Rancher project naming every slug and UUID an
// order's resource may carry under every prefix the settings accept. A
// project it names is an RFC 1123 label (it names the namespace too;
// checked here by hand), starts with the prefix, and is the slug as it is,
// so two resources with slugs never share a project; anything else is
// refused as fault.Invalid. The Keycloak group named after the Waldur
// project's slug either passes the principal check, and then holds no
// path or query character, or is refused.
//
// Without a slug the project is named prefix + "resource-" + the UUID's
// first 8 characters, as the Python plugin does; a slug of that very form
// could meet it, which is why only resources with slugs are compared.
func FuzzProjectName(f *testing.F) {
	f.Add("waldur-", "my-project", "my-project-2", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "proj-slug")
	f.Add("", "", "abc", "0F1E2D3C4B5A69788796A5B4C3D2E1F0", "p")
	f.Add("waldur-", "MyProject", "myproject", "", "a/b")
	f.Add("waldur-", "../cattle-system", "cattle-system", "x", "p?q=1")
	f.Add("waldur-", strings.Repeat("a", 56), strings.Repeat("a", 57), "1234567", "é")
	f.Fuzz(func(t *testing.T, prefix, slug, other, uuid, projectSlug string) {
		s := DefaultSettings()
		s.ProjectPrefix = prefix
		if !isPrefix(prefix) {
			return // the settings refuse it
		}
		r := backend.Resource{UUID: uuid, Slug: slug}
		name, err := ProjectName(prefix, r)
		if err != nil {
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("refusal %v is not fault.Invalid", err)
			}
		} else {
			if !strings.HasPrefix(name, prefix) || !isLabel(name) {
				t.Fatalf("project %q (slug %q, prefix %q) is outside its prefix or no RFC 1123 label", name, slug, prefix)
			}
			if slug != "" && name != prefix+slug {
				t.Fatalf("slug %q became %q: rewritten", slug, name)
			}
			if o, err := ProjectName(prefix, backend.Resource{UUID: uuid, Slug: other}); err == nil && slug != "" && other != "" && other != slug && o == name {
				t.Fatalf("slugs %q and %q share project %q", slug, other, name)
			}
		}
		g := ChildGroupName(projectSlug, backend.RoleAdmin)
		if checkGroup(g) == nil && (strings.ContainsAny(g, "/?&#%= ") || !strings.HasPrefix(g, "project_")) {
			t.Fatalf("group %q passes the principal check with a path or query character", g)
		}
		if pg := ParentGroupName(uuid); !strings.HasPrefix(pg, "c_") || len(pg) > len("c_")+8 {
			t.Fatalf("cluster group %q is not c_ and at most 8 characters", pg)
		}
	})
}

// isPrefix: what can start an RFC 1123 label.
func isPrefix(p string) bool { return p == "" || isLabel(strings.TrimRight(p, "-")) && len(p) < 63 }

// isLabel is RFC 1123's label as the Kubernetes API server checks it:
// the oracle is the rule the platform enforces, not sitebus's own check.
func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }
