package keycloaksync

import (
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

// Settings reads an offering's backend_settings: whether keycloak_enabled
// is set and, if so, the keycloak mapping parsed by keycloak.ParseSettings.
func Settings(o *config.Offering) (keycloak.Config, bool, error) {
	var (
		enabled bool
		raw     map[string]any
	)
	d := config.SettingsDecoder{Raw: o.BackendSettings, Prefix: "backend_settings."}
	d.Bool("keycloak_enabled", &enabled)
	d.Map("keycloak", &raw)
	if err := d.Err(); err != nil || !enabled {
		return keycloak.Config{}, false, err
	}
	kc, err := keycloak.ParseSettings(raw)
	if err != nil {
		return keycloak.Config{}, false, err
	}
	return kc, true, nil
}
