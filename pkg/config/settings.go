package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// SettingsDecoder type-checks values of a plugin's settings mapping
// (backend_settings, or a mapping inside it), collecting one error per bad
// key, each naming the key under Prefix. Backends decode their settings
// with it so every one reports problems the same way.
//
// Decode onto the defaults: each method changes its target only when the
// key is present (and not null), so a key set to "", 0, false or {} keeps
// that value, as the Python plugins' settings.get(key, default) does.
type SettingsDecoder struct {
	// Raw is the mapping as the YAML decoder produced it.
	Raw map[string]any
	// Prefix names where Raw sits, e.g. "backend_settings." or
	// "backend_settings.keycloak.".
	Prefix string
	errs   []error
	known  map[string]bool
}

// SettingError is a problem with one key of a plugin's settings. Key is the
// path below the offering (e.g. "backend_settings.cr_namespace"), which
// Root.OfferingProblems turns into a file, line and offering. Messages
// never hold a value that could be a secret.
type SettingError struct {
	Key, Msg string
	// Warning marks an ignored key rather than an error.
	Warning bool
}

func (e *SettingError) Error() string {
	if e.Warning {
		return "warning: " + e.Key + ": " + e.Msg
	}
	return e.Key + ": " + e.Msg
}

// Err returns every problem found so far, or nil.
func (d *SettingsDecoder) Err() error { return errors.Join(d.errs...) }

// Bad records that key's value v is not what it must be (want, e.g. "a string").
func (d *SettingsDecoder) Bad(key, want string, v any) {
	d.Errorf(key, "must be %s, not %s", want, TypeName(v))
}

// Errorf records a problem with key that is not about its type.
func (d *SettingsDecoder) Errorf(key, format string, args ...any) {
	d.errs = append(d.errs, &SettingError{Key: d.Prefix + key, Msg: fmt.Sprintf(format, args...)})
}

// Known marks keys as understood without decoding them here (read by
// another decoder, or deliberately unused), so Warnings does not list them.
func (d *SettingsDecoder) Known(keys ...string) {
	if d.known == nil {
		d.known = map[string]bool{}
	}
	for _, k := range keys {
		d.known[k] = true
	}
}

// Value returns key's raw value and marks the key known; for settings
// read by hand (a value that may be of several types).
func (d *SettingsDecoder) Value(key string) any {
	d.Known(key)
	return d.Raw[key]
}

// Warnings lists the keys of Raw that nothing read or marked Known, in
// order: the Python plugins ignore such keys, so they are not errors, but
// a misspelt key must not go unseen.
func (d *SettingsDecoder) Warnings() []error {
	names := slices.Sorted(maps.Keys(d.known))
	var out []error
	for _, k := range slices.Sorted(maps.Keys(d.Raw)) {
		if !d.known[k] {
			out = append(out, &SettingError{Key: d.Prefix + k, Msg: UnknownKeyMessage(k, names), Warning: true})
		}
	}
	return out
}

// Str reads a string; an absent or null key leaves *p alone.
func (d *SettingsDecoder) Str(key string, p *string) {
	switch v := d.Value(key).(type) {
	case nil:
	case string:
		*p = v
	default:
		d.Bad(key, "a string", v)
	}
}

// Bool reads a boolean; an absent or null key leaves *p alone.
func (d *SettingsDecoder) Bool(key string, p *bool) {
	switch v := d.Value(key).(type) {
	case nil:
	case bool:
		*p = v
	default:
		d.Bad(key, "a boolean", v)
	}
}

// Map reads a mapping as it is.
func (d *SettingsDecoder) Map(key string, p *map[string]any) {
	switch v := d.Value(key).(type) {
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
	switch v := d.Value(key).(type) {
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
