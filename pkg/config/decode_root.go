package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// root decodes the whole document.
func (d *decoder) root(doc *yaml.Node) *Root {
	r := newRoot()
	n := resolve(doc)
	if isNull(n) {
		return r // reported by Validate: offerings are required
	}
	if n.Kind != yaml.MappingNode {
		d.atLine(scope{}, n.Line, "the top level must be a mapping with an offerings key, not %s", kindName(n))
		d.quiet = append(d.quiet, "")
		return r
	}
	setters := map[string]setter{
		"offerings":                    func(n *yaml.Node, s scope) { r.Offerings = d.offerings(n, s) },
		"sentry_dsn":                   d.str(&r.SentryDSN),
		"elastic_apm_server_url":       d.str(&r.ElasticAPMServerURL),
		"timezone":                     d.str(&r.Timezone),
		"global_proxy":                 d.str(&r.GlobalProxy),
		"log_level":                    d.str(&r.LogLevel),
		"reporting_periods":            d.integer(&r.ReportingPeriods),
		"expose_backend_error_details": d.flag(&r.ExposeBackendErrorDetails),
		"log_shipping":                 func(n *yaml.Node, s scope) { d.logShipping(n, s, &r.LogShipping) },
		"sitebus":                      func(n *yaml.Node, s scope) { d.sitebus(n, s, &r.Sitebus) },
	}
	// Top-level "x-" keys are ignored, as in Compose files, so that a file
	// can hold YAML anchors shared by offerings. The Python agent ignores
	// every unknown key, so such files work there too.
	for i := 0; n.Kind == yaml.MappingNode && i < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); strings.HasPrefix(k.Value, "x-") {
			setters[k.Value] = nil
		}
	}
	d.fields(n, scope{}, setters)
	return r
}

func (d *decoder) logShipping(n *yaml.Node, s scope, l *LogShipping) {
	d.fields(n, s, map[string]setter{
		"enabled":               d.flag(&l.Enabled),
		"ship_interval_seconds": d.integer(&l.ShipIntervalSeconds),
		"buffer_size_mb":        d.integer(&l.BufferSizeMB),
		"log_level":             d.str(&l.LogLevel),
	})
}

func (d *decoder) offerings(n *yaml.Node, s scope) []Offering {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.atLine(s, n.Line, "must be a list of offerings, not %s", kindName(n))
		return nil
	}
	out := make([]Offering, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, d.offering(item, i))
	}
	return out
}
