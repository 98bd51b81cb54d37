package keycloaksync

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

func TestSettings(t *testing.T) {
	kc := map[string]any{"keycloak_url": "https://kc.example.org/", "keycloak_realm": "hpc", "keycloak_username": "svc", "keycloak_password": "pw"}
	tests := map[string]struct {
		settings    map[string]any
		wantEnabled bool
		wantRealm   string
		wantErr     bool
	}{
		"keycloak_enabled reads the keycloak mapping":      {settings: map[string]any{"keycloak_enabled": true, "keycloak": kc}, wantEnabled: true, wantRealm: "hpc"},
		"without keycloak_enabled the mapping is not read": {settings: map[string]any{"keycloak": map[string]any{"keycloak_realm": ""}}},
		"keycloak_enabled false":                           {settings: map[string]any{"keycloak_enabled": false, "keycloak": kc}},
		"a bad mapping is an error":                        {settings: map[string]any{"keycloak_enabled": true, "keycloak": map[string]any{"keycloak_realm": ""}}, wantErr: true},
		"keycloak_enabled not a boolean is an error":       {settings: map[string]any{"keycloak_enabled": []any{}}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, enabled, err := Settings(&config.Offering{Name: "x", BackendSettings: tc.settings})
			if (err != nil) != tc.wantErr || enabled != tc.wantEnabled || got.Realm != tc.wantRealm {
				t.Errorf("Settings = %+v, %v, %v", got, enabled, err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]struct {
		cfg     Config
		wantErr bool
	}{
		"the defaults":                          {cfg: Config{}},
		"cleanup disabled":                      {cfg: Config{CleanupPeriod: -1}},
		"a pending period under a second":       {cfg: Config{PendingPeriod: time.Millisecond}, wantErr: true},
		"a cleanup period under a second":       {cfg: Config{CleanupPeriod: time.Millisecond}, wantErr: true},
		"an offering without its configuration": {cfg: Config{Offerings: []Offering{{}}}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.cfg.setDefaults()
			if err := tc.cfg.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// Offerings that use one realm share its client (and the leftover
// cleanup asks all of them); New makes no call to Keycloak.
func TestNewGroupsOfferingsByRealm(t *testing.T) {
	kc := func(url, realm string) keycloak.Config {
		return keycloak.Config{URL: url, Realm: realm, UserRealm: "master", ClientID: "admin-cli", Username: "svc", Password: "pw"}
	}
	offering := func(uuid string, c keycloak.Config) Offering {
		return Offering{Config: &config.Offering{Name: uuid[:2], WaldurOfferingUUID: uuid}, Keycloak: c}
	}
	s, err := New(nil, Config{Registerer: prometheus.NewRegistry(), Offerings: []Offering{
		offering(offA, kc("https://kc.example.org/", "site")), offering(offB, kc("https://kc.example.org", "site")),
		offering(offOther, kc("https://kc.example.org/", "other")),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.realms) != 2 || s.byOffering[offeringHex(offA)] != s.byOffering[offeringHex(offB)] || len(s.realms[0].offerings) != 2 {
		t.Errorf("realms %d; A and B share one: %v", len(s.realms), s.byOffering[offeringHex(offA)] == s.byOffering[offeringHex(offB)])
	}
	if s.Name() != Name || s.realms[1].client.Realm() != "other" {
		t.Errorf("name %s, second realm %s", s.Name(), s.realms[1].client.Realm())
	}
	if _, err := New(nil, Config{Offerings: []Offering{offering(offA, keycloak.Config{})}}); err == nil {
		t.Error("an offering without a Keycloak URL was accepted")
	}
}
