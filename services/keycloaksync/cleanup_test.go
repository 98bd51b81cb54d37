package keycloaksync

import "testing"

func TestNSSlug(t *testing.T) {
	tests := map[string]struct {
		name     string
		wantSlug string
		wantOK   bool
	}{
		"admin group":                      {"ns_alpha_admin", "alpha", true},
		"readwrite group":                  {"ns_alpha_readwrite", "alpha", true},
		"readonly group":                   {"ns_alpha_readonly", "alpha", true},
		"slug with dashes and underscores": {"ns_ns-alpha_x_admin", "ns-alpha_x", true},
		"no ns_ prefix":                    {"team_alpha_admin", "", false},
		"unknown role":                     {"ns_alpha_owner", "", false},
		"empty slug":                       {"ns__admin", "", false},
		"role alone":                       {"ns_admin", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			slug, ok := nsSlug(tc.name)
			if slug != tc.wantSlug || ok != tc.wantOK {
				t.Errorf("nsSlug(%q) = %q, %v; want %q, %v", tc.name, slug, ok, tc.wantSlug, tc.wantOK)
			}
		})
	}
}
