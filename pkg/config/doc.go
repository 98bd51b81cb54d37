// Package config loads the YAML configuration of the Python
// waldur-site-agent unchanged, plus an optional sitebus-only "sitebus:"
// section, and validates all of it in one pass.
//
// Decoding walks yaml.Node trees instead of unmarshalling into structs so
// that every problem can name the file, line, offering and key path, and so
// that all problems are reported together rather than one per restart.
// Unknown keys are errors (a misspelt key must not be silently ignored, as
// pydantic does), except inside backend_settings and among the extra keys of
// backend_components, which belong to plugins and are preserved as is.
package config
