package managedns

import (
	"errors"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzNamespaceName feeds the namespace naming every slug an order's
// resource may carry (Unicode, path characters, case tricks, any length)
// under every prefix the settings accept. A name it gives is an RFC 1123
// label (checked here by hand, not with the code under test), starts with
// the prefix, is none of the namespaces reserved from orders (the CR
// namespace, default, kube-*), is the slug used as it is (never rewritten, so two slugs
// never share a namespace or a Keycloak access group); anything else is
// refused as fault.Invalid.
func FuzzNamespaceName(f *testing.F) {
	f.Add("waldur-", "my-project", "my-project-2")
	f.Add("", "abc1", "ABC1")
	f.Add("waldur-", "MyProject", "myproject")
	f.Add("waldur-", "my_project", "my-project")
	f.Add("waldur-", "../kube-system", "kube-system")
	f.Add("waldur-", strings.Repeat("a", 56), strings.Repeat("a", 57))
	f.Add("waldur-", "ｋube", "kube")
	f.Add("waldur-", "a\x00b", "a-b")
	f.Add("waldur-", "a_admin", "a")
	f.Add("", "kube-system", "default")
	f.Add("waldur-", "a/b", "a-b")
	f.Add("waldur-", "straße", "strasse")
	f.Fuzz(func(t *testing.T, prefix, slug, other string) {
		if (Settings{CRNamespace: "waldur-system", NamespacePrefix: prefix}).Validate() != nil {
			return // the settings refuse this prefix before any order
		}
		r := backend.Resource{UUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Slug: slug}
		b := &Backend{settings: Settings{NamespacePrefix: prefix, CRNamespace: DefaultCRNamespace}}
		name, err := b.BackendID(r)
		if err != nil {
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("refusal %v is not fault.Invalid", err)
			}
			return
		}
		if name != prefix+slug {
			t.Fatalf("slug %q under prefix %q became %q: rewritten", slug, prefix, name)
		}
		if !isLabel(name) {
			t.Fatalf("name %q is no RFC 1123 label", name)
		}
		if name == DefaultCRNamespace || name == "default" || strings.HasPrefix(name, "kube-") {
			t.Fatalf("slug %q was given the reserved namespace %q", slug, name)
		}
		o, oerr := b.BackendID(backend.Resource{Slug: other})
		if oerr == nil && other != slug && o == name {
			t.Fatalf("slugs %q and %q share namespace %q", slug, other, name)
		}
		// The Keycloak groups of the namespace's roles: no path separator,
		// and none shared with another slug's (a slug that passes holds no
		// '_', so ns_<slug>_<role> reads back one way only).
		for _, role := range backend.Roles {
			g := GroupName(slug, role)
			if strings.Contains(g, "/") {
				t.Fatalf("group %q holds a path separator", g)
			}
			if oerr == nil && other != slug {
				for _, r2 := range backend.Roles {
					if GroupName(other, r2) == g {
						t.Fatalf("slugs %q and %q share group %q", slug, other, g)
					}
				}
			}
		}
	})
}

// isLabel is RFC 1123's label as the Kubernetes API server checks it:
// the oracle is the rule the platform enforces, not sitebus's own check.
func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// FuzzQuota feeds the quota conversion any limits an order may carry
// (they reach the CR's spec.quota, which the operator copies into a
// ResourceQuota). Limits it accepts become quantities Kubernetes parses,
// none negative, and read back as the limits given; anything else (NaN,
// infinities, negative numbers) is refused as fault.Invalid.
func FuzzQuota(f *testing.F) {
	f.Add(4.0, 8.0, 100.0, 1.0)
	f.Add(0.5, 0.25, 1e-5, 0.0)
	f.Add(-1.0, 8.0, 100.0, 1.0)
	f.Add(1e20, 1e300, 5e-324, 3.0)
	f.Add(math.NaN(), math.Inf(1), 0.0, 0.0)
	f.Fuzz(func(t *testing.T, cpu, ram, storage, gpu float64) {
		c := quotaCodec{mapping: DefaultQuotaMapping()}
		limits := map[string]float64{"cpu": cpu, "ram": ram, "storage": storage, "gpu": gpu}
		quota, err := c.toQuota(limits)
		if err != nil {
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("refusal %v is not fault.Invalid", err)
			}
			return
		}
		for field, s := range quota {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				t.Fatalf("limits %v made %s %q, which Kubernetes cannot parse: %v", limits, field, s, err)
			}
			if q.Sign() < 0 {
				t.Fatalf("limits %v made a negative %s %q", limits, field, s)
			}
		}
		back, err := c.fromQuota(quota)
		if err != nil {
			t.Fatalf("quota %v does not read back: %v", quota, err)
		}
		for k, v := range back {
			if want := limits[k]; v != want && math.Abs(v-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("limit %s %v read back as %v (quota %q)", k, want, v, quota)
			}
		}
	})
}
