package okd

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

func TestNames(t *testing.T) {
	r := backend.Resource{UUID: "u1", Slug: "prod-env", CustomerSlug: "acme", ProjectSlug: "webdev"}
	tests := map[string]struct {
		edit func(*Settings)
		r    backend.Resource
		want Names
	}{
		"seed table":          {nil, r, Names{"waldur-alloc-prod-env", "waldur-org-acme", "waldur-proj-webdev"}},
		"no namespace prefix": {func(s *Settings) { s.NamespacePrefix = "" }, r, Names{"alloc-prod-env", "org-acme", "proj-webdev"}},
		"no allocation prefix": {func(s *Settings) { s.AllocationPrefix = "" }, r,
			Names{"waldur-prod-env", "waldur-org-acme", "waldur-proj-webdev"}},
		"no customer or project slug": {nil, backend.Resource{Slug: "x"}, Names{Project: "waldur-alloc-x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := DefaultSettings()
			if tc.edit != nil {
				tc.edit(&s)
			}
			got, err := s.Names(tc.r)
			if err != nil || got != tc.want {
				t.Errorf("Names = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestProjectNameRefusesInvalid(t *testing.T) {
	s := DefaultSettings()
	for _, slug := range []string{"", "Upper", "under_score", "dot.ted", "trailing-", strings.Repeat("a", 64-len("waldur-alloc-"))} {
		name, err := s.ProjectName(backend.Resource{UUID: "u", Slug: slug})
		if !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) {
			t.Errorf("ProjectName(%q) = %q, %v; want terminal ErrInvalid", slug, name, err)
		}
	}
	if name, err := s.ProjectName(backend.Resource{Slug: strings.Repeat("a", 63-len("waldur-alloc-"))}); err != nil || len(name) != 63 {
		t.Errorf("63 characters: %q, %v", name, err)
	}
}
