package keycloak

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// settingsPrefix is where the keycloak mapping sits in an offering.
const settingsPrefix = "backend_settings.keycloak."

// ParseSettings decodes the keycloak mapping of backend_settings (keys as
// in the Python client), fills the defaults and validates the result. Keys
// it does not know are ignored, as Python ignores them. Every problem is
// reported, each naming its key; values are never echoed for the password.
func ParseSettings(raw map[string]any) (Config, error) {
	var c Config
	d := settingsDecoder{raw: raw}
	d.str("keycloak_url", &c.URL)
	d.str("keycloak_realm", &c.Realm)
	d.str("keycloak_user_realm", &c.UserRealm)
	d.str("client_id", &c.ClientID)
	d.str("keycloak_username", &c.Username)
	var password string
	d.str("keycloak_password", &password)
	c.Password = config.Secret(password)
	d.sslVerify(&c)
	if len(d.errs) > 0 {
		return Config{}, errors.Join(d.errs...)
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

type settingsDecoder struct {
	raw  map[string]any
	errs []error
}

func (d *settingsDecoder) bad(key, want string, v any) {
	d.errs = append(d.errs, fmt.Errorf("%s%s: must be %s, not %s", settingsPrefix, key, want, typeName(v)))
}

func (d *settingsDecoder) str(key string, p *string) {
	switch v := d.raw[key].(type) {
	case nil:
	case string:
		*p = v
	default:
		d.bad(key, "a string", v)
	}
}

// sslVerify reads keycloak_ssl_verify as Python requests reads verify: a
// boolean, or a path to a CA bundle. "true"/"false" strings count as
// booleans, since environment-templated YAML often quotes them.
func (d *settingsDecoder) sslVerify(c *Config) {
	const key = "keycloak_ssl_verify"
	switch v := d.raw[key].(type) {
	case nil:
	case bool:
		c.InsecureSkipVerify = !v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "1":
		case "false", "no", "0":
			c.InsecureSkipVerify = true
		case "":
			d.errs = append(d.errs, fmt.Errorf("%s%s: must be a boolean or a CA bundle path, not an empty string", settingsPrefix, key))
		default:
			c.CAFile = v
		}
	default:
		d.bad(key, "a boolean or a CA bundle path", v)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
