package config

import (
	"errors"
	"fmt"
	"slices"
)

// SettingsDecoder type-checks values of a plugin's settings mapping
// (backend_settings, or a mapping inside it), collecting one error per bad
// key, each naming the key under Prefix. Backends decode their settings
// with it so every one reports problems the same way.
type SettingsDecoder struct {
	// Raw is the mapping as the YAML decoder produced it.
	Raw map[string]any
	// Prefix names where Raw sits, e.g. "backend_settings." or
	// "backend_settings.keycloak.".
	Prefix string
	errs   []error
}

// Err returns every problem found so far, or nil.
func (d *SettingsDecoder) Err() error { return errors.Join(d.errs...) }

// Bad records that key's value v is not what it must be (want, e.g. "a string").
func (d *SettingsDecoder) Bad(key, want string, v any) {
	d.errs = append(d.errs, fmt.Errorf("%s%s: must be %s, not %s", d.Prefix, key, want, TypeName(v)))
}

// Errorf records a problem with key that is not about its type.
func (d *SettingsDecoder) Errorf(key, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%s%s: %s", d.Prefix, key, fmt.Sprintf(format, args...)))
}

// Str reads a string; an absent or null key leaves *p alone.
func (d *SettingsDecoder) Str(key string, p *string) {
	switch v := d.Raw[key].(type) {
	case nil:
	case string:
		*p = v
	default:
		d.Bad(key, "a string", v)
	}
}

// Bool reads a boolean; an absent or null key leaves *p alone.
func (d *SettingsDecoder) Bool(key string, p *bool) {
	switch v := d.Raw[key].(type) {
	case nil:
	case bool:
		*p = v
	default:
		d.Bad(key, "a boolean", v)
	}
}

// Map reads a mapping as it is.
func (d *SettingsDecoder) Map(key string, p *map[string]any) {
	switch v := d.Raw[key].(type) {
	case nil:
	case map[string]any:
		*p = v
	default:
		d.Bad(key, "a mapping", v)
	}
}

// StrMap reads a mapping of strings; with nullable, a null value is kept as
// "" (component_quota_mapping uses it to unmap a default type).
func (d *SettingsDecoder) StrMap(key string, p *map[string]string, nullable bool) {
	var m map[string]any
	switch v := d.Raw[key].(type) {
	case nil:
		return
	case map[string]any:
		m = v
	default:
		d.Bad(key, "a mapping", v)
		return
	}
	out := make(map[string]string, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			out[k] = v
		case nil:
			if nullable {
				out[k] = ""
				continue
			}
			d.Bad(key+"."+k, "a string", v)
		default:
			d.Bad(key+"."+k, "a string", v)
		}
	}
	*p = out
}

// TypeName names a decoded YAML value's type the way a config author
// thinks of it.
func TypeName(v any) string {
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
