package openstack

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/sitebus/sitebus/pkg/fault"
)

func TestAuthOptionsOfAnInlineCloud(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cloud     Cloud
		region    string
		scope     *gophercloud.AuthScope
		domain    string
		wantReg   string
		avail     gophercloud.Availability
		skipCheck bool
	}{
		{"project by name takes its domain", Cloud{AuthURL: "https://k/v3", Username: "u", Password: "p",
			UserDomainName: "Users", ProjectName: "admin", ProjectDomainName: "Projects", RegionName: "R1", Verify: true},
			"", &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Projects"}, "Users", "R1", gophercloud.AvailabilityPublic, false},
		{"project by name without a domain takes the user's", Cloud{AuthURL: "https://k/v3", Username: "u", Password: "p",
			UserDomainID: "default", ProjectName: "admin", Interface: "internal", Verify: true},
			"", &gophercloud.AuthScope{ProjectName: "admin", DomainID: "default"}, "", "", gophercloud.AvailabilityInternal, false},
		{"project by id; the zone's region wins", Cloud{AuthURL: "https://k/v3", Username: "u", Password: "p",
			DomainName: "Default", ProjectID: "p1", RegionName: "R1", Interface: "adminURL"},
			"R2", &gophercloud.AuthScope{ProjectID: "p1"}, "Default", "R2", gophercloud.AvailabilityAdmin, true},
		{"an application credential has its own scope", Cloud{AuthURL: "https://k/v3",
			AuthType: "v3applicationcredential", ApplicationCredentialID: "ac", ApplicationCredentialSecret: "s", ProjectName: "ignored", Verify: true},
			"", nil, "", "", gophercloud.AvailabilityPublic, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ao, eo, tlsConf, err := authOptions(Config{Cloud: tc.cloud, Region: tc.region})
			if err != nil {
				t.Fatal(err)
			}
			if (ao.Scope == nil) != (tc.scope == nil) || ao.Scope != nil && *ao.Scope != *tc.scope {
				t.Errorf("scope %+v, want %+v", ao.Scope, tc.scope)
			}
			if tc.domain != "" && ao.DomainName != tc.domain && ao.DomainID != tc.domain {
				t.Errorf("user domain %q/%q, want %s", ao.DomainName, ao.DomainID, tc.domain)
			}
			if eo.Region != tc.wantReg || eo.Availability != tc.avail {
				t.Errorf("endpoint %+v", eo)
			}
			if tlsConf.InsecureSkipVerify != tc.skipCheck {
				t.Errorf("InsecureSkipVerify %v, cloud verify %v", tlsConf.InsecureSkipVerify, tc.cloud.Verify)
			}
			if string(tc.cloud.Password) != ao.Password || string(tc.cloud.ApplicationCredentialSecret) != ao.ApplicationCredentialSecret {
				t.Error("credentials not passed on")
			}
		})
	}
}

func TestAuthOptionsRefusesABadCACert(t *testing.T) {
	_, _, _, err := authOptions(Config{Cloud: Cloud{AuthURL: "https://k/v3", CACert: t.TempDir() + "/missing.pem"}})
	if !fault.IsTerminal(err) {
		t.Fatalf("err %v, want terminal", err)
	}
}
