// Package config loads the YAML configuration of the Python
// waldur-site-agent unchanged, plus an optional sitebus-only "sitebus:"
// section, and validates all of it in one pass.
//
// Decoding walks yaml.Node trees instead of unmarshalling into structs so
// that every problem can name the file, line, offering and key path, and so
// that all problems are reported together rather than one per restart.
// Decoding starts from the defaults and sets only the keys present, so, as
// with the Python agent's models and settings.get(key, default), a missing
// key takes the default and a present one keeps its value, even "", 0 or
// false; Validate refuses those that cannot work instead of defaulting them.
// Unknown keys are warnings (Root.Warnings): the Python agent ignores them,
// so a file with them must load, but a misspelt key must not pass unseen.
// backend_settings belongs to the backends (see SettingsDecoder), and the
// extra keys of backend_components are preserved as is.
package config
