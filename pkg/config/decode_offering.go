package config

import (
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// offering decodes offerings[i].
func (d *decoder) offering(n *yaml.Node, i int) Offering {
	o := newOffering()
	n = resolve(n)
	d.lines[offeringScope(i, "").canon] = n.Line
	s := offeringScope(i, nameOf(n))

	var token, tokenFile, secret, secretFile *yaml.Node
	keep := func(p **yaml.Node) setter { return func(n *yaml.Node, _ scope) { *p = n } }
	d.fields(n, s, map[string]setter{
		"name":                             d.str(&o.Name),
		"waldur_api_url":                   d.str(&o.WaldurAPIURL),
		"waldur_api_token":                 keep(&token),
		"waldur_api_token_file":            keep(&tokenFile),
		"oidc_token_url":                   d.str(&o.OIDCTokenURL),
		"oidc_client_id":                   d.str(&o.OIDCClientID),
		"oidc_client_secret":               keep(&secret),
		"oidc_client_secret_file":          keep(&secretFile),
		"waldur_offering_uuid":             d.str(&o.WaldurOfferingUUID),
		"backend_type":                     d.str(&o.BackendType),
		"backend_settings":                 d.anyMap(&o.BackendSettings),
		"backend_components":               func(n *yaml.Node, s scope) { d.components(n, s, &o) },
		"order_processing_backend":         d.str(&o.OrderProcessingBackend),
		"membership_sync_backend":          d.str(&o.MembershipSyncBackend),
		"reporting_backend":                d.str(&o.ReportingBackend),
		"username_management_backend":      d.str(&o.UsernameManagementBackend),
		"websocket_use_tls":                d.flag(&o.WebsocketUseTLS),
		"stomp_enabled":                    d.flag(&o.StompEnabled),
		"stomp_membership_sync_enabled":    d.optFlag(&o.StompMembershipSyncEnabled),
		"stomp_ws_host":                    d.str(&o.StompWSHost),
		"stomp_ws_port":                    d.integer(&o.StompWSPort),
		"stomp_ws_path":                    d.str(&o.StompWSPath),
		"resource_import_enabled":          d.flag(&o.ResourceImportEnabled),
		"username_reconciliation_enabled":  d.flag(&o.UsernameReconciliationEnabled),
		"verify_ssl":                       d.flag(&o.VerifySSL),
		"preserve_unmanaged_backend_users": d.flag(&o.PreserveUnmanagedBackendUsers),
		"omit_anomalous_usage_components":  d.flag(&o.OmitAnomalousUsageComponents),
		// Older Python agents documented an MQTT switch; it never does
		// anything now, so old files keep loading.
		"mqtt_enabled": nil,
	})
	// Python's model requires name but takes any string, even "": only a
	// missing key is refused (Validate checks the other required keys'
	// values, none of which can be empty).
	if isNull(valueOf(n, "name")) && !d.covers(s.key("name").canon) && resolve(n).Kind == yaml.MappingNode {
		d.at(s.key("name"), "is required")
	}
	o.WaldurAPIToken = d.secret(token, tokenFile, s, "waldur_api_token")
	o.OIDCClientSecret = d.secret(secret, secretFile, s, "oidc_client_secret")
	return o
}

// valueOf returns the value of key in mapping n, or nil; merge keys count.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	var out *yaml.Node
	scratch := &decoder{problems: problems{lines: map[string]int{}}}
	for _, e := range scratch.entries(n, scope{}) {
		if e.key == key {
			out = e.vn
		}
	}
	return out
}

// nameOf peeks at an offering's name so that messages about keys written
// before "name" can already show it.
func nameOf(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Value == "name" && v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
			return v.Value
		}
	}
	return ""
}

// componentPassThrough are the BackendComponent keys beyond the model's
// own that the Python agent knows: offering-component fields it passes to
// Waldur, and the plugin fields type and k8s_resource. Other keys are kept
// too (Extra), with a warning, since a typo there goes unnoticed.
var componentPassThrough = []string{
	"description", "min_value", "max_value", "max_available_limit", "default_limit",
	"limit_period", "article_code", "is_boolean", "is_prepaid", "min_prepaid_duration",
	"max_prepaid_duration", "prepaid_duration_step", "min_renewal_duration",
	"max_renewal_duration", "renewal_duration_step", "type", "k8s_resource",
}

// components decodes backend_components, keeping their file order.
func (d *decoder) components(n *yaml.Node, s scope, o *Offering) {
	o.BackendComponents = map[string]BackendComponent{}
	for _, e := range d.entries(n, s) {
		cs := s.key(e.key)
		d.lines[cs.canon] = e.keyNode.Line
		c := newBackendComponent()
		known := map[string]setter{
			"measured_unit":         d.str(&c.MeasuredUnit),
			"unit_factor":           d.float(&c.UnitFactor),
			"unit_factor_reporting": d.optFloat(&c.UnitFactorReporting),
			"accounting_type":       d.str(&c.AccountingType),
			"label":                 d.str(&c.Label),
			"limit":                 d.optFloat(&c.Limit),
		}
		set := map[string]bool{}
		for _, f := range d.entries(e.vn, cs) {
			fs := cs.key(f.key)
			d.lines[fs.canon] = f.keyNode.Line
			if !isNull(f.vn) {
				set[f.key] = true
			}
			if setter := known[f.key]; setter != nil {
				setter(f.vn, fs)
				continue
			}
			if !slices.Contains(componentPassThrough, f.key) {
				d.warnAt(fs, "%s", strings.Replace(UnknownKeyMessage(f.key, append(slices.Collect(maps.Keys(known)), componentPassThrough...)),
					"is ignored", "is passed to Waldur as it is", 1))
			}
			d.recordLines(f.vn, fs)
			if v, ok := d.anyValue(f.vn, fs); ok {
				if c.Extra == nil {
					c.Extra = map[string]any{}
				}
				c.Extra[f.key] = v
			}
		}
		// Required by Python's model, which accepts any string (even "")
		// for the first two; Validate checks accounting_type's value.
		if resolve(e.vn).Kind == yaml.MappingNode || isNull(e.vn) {
			for _, k := range []string{"measured_unit", "label", "accounting_type"} {
				if !set[k] && !d.covers(cs.key(k).canon) {
					hint := ""
					if k == "accounting_type" {
						hint = " (one of " + strings.Join(accountingTypes, ", ") + ")"
					}
					d.at(cs.key(k), "is required%s", hint)
				}
			}
		}
		o.BackendComponents[e.key] = c
		o.ComponentOrder = append(o.ComponentOrder, e.key)
	}
}
