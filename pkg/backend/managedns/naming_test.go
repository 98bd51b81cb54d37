package managedns

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

func TestNamespaceName(t *testing.T) {
	long := strings.Repeat("a", 57) // "waldur-" + 57 = 64
	tests := []struct {
		name    string
		prefix  string
		slug    string
		want    string
		wantErr string
	}{
		{name: "prefix and slug are joined", prefix: "waldur-", slug: "my-project", want: "waldur-my-project"},
		{name: "an empty prefix leaves the slug", prefix: "", slug: "abc1", want: "abc1"},
		{name: "63 characters are allowed", prefix: "waldur-", slug: long[:56], want: "waldur-" + long[:56]},
		{name: "an empty slug is refused naming the resource", prefix: "waldur-", slug: "",
			wantErr: "Resource 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 has no slug, cannot create ManagedNamespace"},
		{name: "64 characters exceed the limit", prefix: "waldur-", slug: long,
			wantErr: "Namespace name 'waldur-" + long + "' exceeds 63 characters (64)"},
		{name: "upper case is refused, not lower-cased", prefix: "waldur-", slug: "MyProject",
			wantErr: "Namespace name 'waldur-MyProject' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "underscores are refused, not rewritten", prefix: "waldur-", slug: "my_project",
			wantErr: "Namespace name 'waldur-my_project' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "a trailing dash is refused", prefix: "waldur-", slug: "abc-",
			wantErr: "Namespace name 'waldur-abc-' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "a leading dash is refused", prefix: "", slug: "-abc",
			wantErr: "Namespace name '-abc' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "with an empty prefix, upper case is refused naming the slug", prefix: "", slug: "MyProject",
			wantErr: "Namespace name 'MyProject' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "with an empty prefix, underscores are refused naming the slug", prefix: "", slug: "my_project",
			wantErr: "Namespace name 'my_project' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "with an empty prefix, a 63-character slug is allowed", prefix: "", slug: strings.Repeat("b", 63), want: strings.Repeat("b", 63)},
		{name: "with an empty prefix, a 64-character slug is refused naming it", prefix: "", slug: strings.Repeat("b", 64),
			wantErr: "Namespace name '" + strings.Repeat("b", 64) + "' exceeds 63 characters (64)"},
		{name: "a dot is refused, not rewritten", prefix: "", slug: "x.kube-system",
			wantErr: "Namespace name 'x.kube-system' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
		{name: "a path separator is refused", prefix: "waldur-", slug: "a/b",
			wantErr: "Namespace name 'waldur-a/b' is not a valid RFC 1123 label: must be lowercase alphanumeric or '-', must start and end with an alphanumeric character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := backend.Resource{UUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Slug: tt.slug}
			got, err := namespaceName(tt.prefix, r)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) {
					t.Fatalf("err %v is not a terminal ErrInvalid", err)
				}
				if tt.slug != "" && !strings.Contains(err.Error(), tt.slug) {
					t.Fatalf("err %q does not name the slug %q", err, tt.slug)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestValidateNameEmpty(t *testing.T) {
	err := validateName("")
	if err == nil || err.Error() != "Namespace name must not be empty" || !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestBackendIDRefusesReservedNamespaces(t *testing.T) {
	for name, tc := range map[string]struct{ prefix, slug string }{
		"the CR namespace, from the default prefix and a slug named system": {"waldur-", "system"},
		"the default namespace, with no prefix":                             {"", "default"},
		"a kube- namespace, with no prefix":                                 {"", "kube-system"},
		"the CR namespace itself, with no prefix":                           {"", "waldur-system"},
	} {
		t.Run(name, func(t *testing.T) {
			b := &Backend{settings: Settings{NamespacePrefix: tc.prefix, CRNamespace: DefaultCRNamespace}}
			got, err := b.BackendID(backend.Resource{UUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Slug: tc.slug})
			if err == nil || !errors.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "is reserved") {
				t.Fatalf("BackendID = %q, %v; want a terminal refusal naming the reserved namespace", got, err)
			}
		})
	}
	b := &Backend{settings: Settings{NamespacePrefix: "waldur-", CRNamespace: DefaultCRNamespace}}
	if got, err := b.BackendID(backend.Resource{Slug: "systems"}); err != nil || got != "waldur-systems" {
		t.Fatalf("BackendID of an ordinary slug = %q, %v", got, err)
	}
}
