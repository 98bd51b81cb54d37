package okd

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzProjectName feeds the OpenShift project naming every slug an order's
// resource may carry under every namespace and allocation prefix the
// settings accept. A project it names is an RFC 1123 label (checked here
// by hand), starts with namespace_prefix + allocation_prefix, and is the
// slug used as it is, so two slugs never share a project; anything else
// is refused as fault.Invalid.
func FuzzProjectName(f *testing.F) {
	f.Add("waldur-", "alloc-", "my-project", "my-project-2", "cust", "proj")
	f.Add("", "", "abc", "ABC", "", "")
	f.Add("waldur-", "alloc-", "../openshift", "openshift", "c/../x", "p")
	f.Add("waldur-", "alloc-", strings.Repeat("a", 50), strings.Repeat("a", 51), "c", "p")
	f.Add("waldur-", "alloc-", "İstanbul", "istanbul", "c", "p")
	f.Fuzz(func(t *testing.T, nsPrefix, allocPrefix, slug, other, customer, project string) {
		s := DefaultSettings()
		s.NamespacePrefix, s.AllocationPrefix = nsPrefix, allocPrefix
		if !isPrefix(nsPrefix + allocPrefix) {
			return // settings a site could not name any project with
		}
		r := backend.Resource{UUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Slug: slug, CustomerSlug: customer, ProjectSlug: project}
		n, err := s.Names(r)
		if err != nil {
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("refusal %v is not fault.Invalid", err)
			}
			return
		}
		if n.Project != nsPrefix+allocPrefix+slug {
			t.Fatalf("slug %q became project %q: rewritten or outside its prefix", slug, n.Project)
		}
		if !isLabel(n.Project) {
			t.Fatalf("project %q is no RFC 1123 label", n.Project)
		}
		if o, err := s.ProjectName(backend.Resource{Slug: other}); err == nil && other != slug && o == n.Project {
			t.Fatalf("slugs %q and %q share project %q", slug, other, o)
		}
	})
}

// isPrefix: what can start an RFC 1123 label.
func isPrefix(p string) bool { return p == "" || isLabel(strings.TrimRight(p, "-")) && len(p) < 63 }

// isLabel is RFC 1123's label as the Kubernetes API server checks it:
// the oracle is the rule the platform enforces, not sitebus's own check.
func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }
