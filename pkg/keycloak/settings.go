package keycloak

import (
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// settingsPrefix is where the keycloak mapping sits in an offering.
const settingsPrefix = "backend_settings.keycloak."

// ParseSettings decodes the keycloak mapping of backend_settings (keys as
// in the Python client) onto the Python defaults and validates the result.
// Only a missing (or null) key takes its default: keycloak_realm: "" is
// refused, not turned back into "waldur". Keys it does not know are
// ignored, as Python ignores them, and listed in Config.Warnings. Every
// problem is reported, each a *config.SettingError naming its key; values
// are never echoed for the password.
func ParseSettings(raw map[string]any) (Config, error) {
	c := Config{URL: DefaultURL, Realm: DefaultRealm, UserRealm: DefaultUserRealm, ClientID: DefaultClientID}
	d := config.SettingsDecoder{Raw: raw, Prefix: settingsPrefix}
	d.Str("keycloak_url", &c.URL)
	d.Str("keycloak_realm", &c.Realm)
	d.Str("keycloak_user_realm", &c.UserRealm)
	d.Str("client_id", &c.ClientID)
	d.Str("keycloak_username", &c.Username)
	var password string
	d.Str("keycloak_password", &password)
	c.Password = config.Secret(password)
	sslVerify(&d, &c)
	if err := d.Err(); err != nil {
		return Config{}, err
	}
	c.Warnings = d.Warnings()
	// Validate first: WithDefaults would put a default over an empty value.
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c.WithDefaults(), nil
}

// sslVerify reads keycloak_ssl_verify as Python requests reads verify: a
// boolean, or a path to a CA bundle. "true"/"false" strings count as
// booleans, since environment-templated YAML often quotes them.
func sslVerify(d *config.SettingsDecoder, c *Config) {
	const key = "keycloak_ssl_verify"
	switch v := d.Value(key).(type) {
	case nil:
	case bool:
		c.InsecureSkipVerify = !v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "1":
		case "false", "no", "0":
			c.InsecureSkipVerify = true
		case "":
			d.Errorf(key, "must be a boolean or a CA bundle path, not an empty string")
		default:
			c.CAFile = v
		}
	default:
		d.Bad(key, "a boolean or a CA bundle path", v)
	}
}
