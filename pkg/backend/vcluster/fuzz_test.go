package vcluster

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzVClusterOrder feeds a virtual cluster's create order every slug and
// attributes body an end user can make Waldur send. A host namespace it
// names is vc-<slug> as given (never rewritten, so two slugs never share
// one), an RFC 1123 label checked with the API server's own rule, and the
// Rancher cluster and kubeconfig Secret are named after it; a slug it
// cannot name is refused as fault.Invalid. Attributes it accepts hold
// finite, non-negative quota numbers; those a ResourceQuota holds read
// back from its fields as given, larger ones are refused (never clamped), and a Kubernetes version a version parser takes;
// everything else is refused as backend.ErrInvalid, never a panic.
func FuzzVClusterOrder(f *testing.F) {
	f.Add("demo", "demo-2", `{"name": "demo", "cpu": 2, "ram": 4, "storage": 10, "kubernetes_version": "v1.31.2"}`)
	f.Add("Demo", "demo", `{"cpu": -1}`)
	f.Add("a/b", "a-b", `{"ram": 1e400}`)
	f.Add(strings.Repeat("a", 60), strings.Repeat("a", 61), `{"storage": "10"}`)
	f.Add("ｄemo", "demo", `{"kubernetes_version": "1.31;rm -rf /"}`)
	f.Add("demo", "", `{"cpu": 0.0000001, "ram": 123456789012345678901234567890}`)
	f.Add("x", "y", `[1, 2]`)
	f.Add("x", "y", `null`)
	f.Add("x", "y", `{"kubernetes_version": "v1.31+k3s1"}`)
	f.Fuzz(func(t *testing.T, slug, other, attributes string) {
		r := backend.Resource{UUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Slug: slug}
		ns, err := NamespaceName(r)
		if err != nil {
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("slug %q refused with %v, not fault.Invalid", slug, err)
			}
		} else {
			if ns != NamespacePrefix+slug {
				t.Fatalf("slug %q became namespace %q: rewritten", slug, ns)
			}
			if errs := validation.IsDNS1123Label(ns); len(errs) != 0 {
				t.Fatalf("namespace %q is no RFC 1123 label: %v", ns, errs)
			}
			if ClusterName(ns) != ns || SecretName(ns) != ns {
				t.Fatalf("cluster %q or secret %q is not the namespace %q", ClusterName(ns), SecretName(ns), ns)
			}
			if o, oerr := NamespaceName(backend.Resource{Slug: other}); oerr == nil && other != slug && o == ns {
				t.Fatalf("slugs %q and %q share namespace %q", slug, other, ns)
			}
		}

		a, err := DecodeAttributes(json.RawMessage(attributes))
		if err != nil {
			if !errors.Is(err, backend.ErrInvalid) {
				t.Fatalf("attributes %q refused with %v, not backend.ErrInvalid", attributes, err)
			}
			return
		}
		if a.KubernetesVersion != "" {
			if _, verr := version.ParseGeneric(a.KubernetesVersion); verr != nil {
				t.Fatalf("kubernetes_version %q accepted, but a version parser refuses it: %v", a.KubernetesVersion, verr)
			}
		}
		limits := a.Limits()
		for k, v := range limits {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("limit %s = %v accepted", k, v)
			}
		}
		if err := checkQuota(limits); err != nil {
			// Past what a ResourceQuota holds: refused, never clamped.
			if !errors.Is(err, fault.Invalid) {
				t.Fatalf("limits %v refused with %v, not fault.Invalid", limits, err)
			}
			return
		}
		back := fromQuota(toQuota(limits))
		for k, v := range limits {
			got, ok := back[k]
			// The quota keeps CPU in millicores and memory and storage in
			// bytes, rounded up; a float read back may differ in its last digits.
			if !ok || got < v*(1-1e-12) || got-v > 1e-3*math.Max(1, v) {
				t.Fatalf("limit %s = %v reads back from the quota as %v (present %v)", k, v, got, ok)
			}
		}
	})
}
