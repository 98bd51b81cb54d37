package config

import (
	"net/url"
	"strings"
)

// Offering is one entry of "offerings": a Waldur marketplace offering and
// the backend that serves it.
type Offering struct {
	Name         string `json:"name"`
	WaldurAPIURL string `json:"waldur_api_url"` // always ends in "/"

	// WaldurAPIToken is empty when the offering authenticates with OIDC.
	WaldurAPIToken   Secret `json:"waldur_api_token"`
	OIDCTokenURL     string `json:"oidc_token_url,omitempty"`
	OIDCClientID     string `json:"oidc_client_id,omitempty"`
	OIDCClientSecret Secret `json:"oidc_client_secret"`

	// WaldurOfferingUUID is kept as written: the Python agent names its
	// identity "agent-<uuid as configured>". Use OfferingUUIDHex to compare.
	WaldurOfferingUUID string `json:"waldur_offering_uuid"`
	BackendType        string `json:"backend_type"` // lower-cased

	// BackendSettings are the plugin settings, decoded generically; the
	// backend packages interpret them.
	BackendSettings map[string]any `json:"backend_settings"`

	// BackendComponents maps a component type (e.g. "cpu") to its settings.
	// ComponentOrder lists the same keys in file order, because Go maps
	// are unordered and components are pushed to Waldur in that order.
	BackendComponents map[string]BackendComponent `json:"backend_components"`
	ComponentOrder    []string                    `json:"-"`

	// Entry-point names; an empty value disables that mode for the offering.
	OrderProcessingBackend    string `json:"order_processing_backend,omitempty"`
	MembershipSyncBackend     string `json:"membership_sync_backend,omitempty"`
	ReportingBackend          string `json:"reporting_backend,omitempty"`
	UsernameManagementBackend string `json:"username_management_backend"`

	WebsocketUseTLS bool `json:"websocket_use_tls"`
	StompEnabled    bool `json:"stomp_enabled"`
	// StompMembershipSyncEnabled is nil when unset; see MembershipViaSTOMP.
	StompMembershipSyncEnabled *bool  `json:"stomp_membership_sync_enabled"`
	StompWSHost                string `json:"stomp_ws_host,omitempty"` // "" = host of WaldurAPIURL
	StompWSPort                int    `json:"stomp_ws_port,omitempty"` // 0 = from WebsocketUseTLS
	StompWSPath                string `json:"stomp_ws_path"`

	ResourceImportEnabled         bool `json:"resource_import_enabled"`
	UsernameReconciliationEnabled bool `json:"username_reconciliation_enabled"`
	VerifySSL                     bool `json:"verify_ssl"`

	// Keys added by Python agents newer than 1.0.6rc17; accepted so their
	// files load, and kept because they change membership and usage sync.
	PreserveUnmanagedBackendUsers bool `json:"preserve_unmanaged_backend_users"`
	OmitAnomalousUsageComponents  bool `json:"omit_anomalous_usage_components"`
}

// BackendComponent describes one accounting component of an offering.
type BackendComponent struct {
	MeasuredUnit        string   `json:"measured_unit"`
	UnitFactor          float64  `json:"unit_factor"`
	UnitFactorReporting *float64 `json:"unit_factor_reporting"` // nil = use UnitFactor
	AccountingType      string   `json:"accounting_type"`       // usage, limit or one
	Label               string   `json:"label"`
	Limit               *float64 `json:"limit"`

	// Extra holds every other key as written (type, k8s_resource,
	// description, min_value, limit_period, ...): plugins read some, the
	// rest are passed through to Waldur's offering components.
	Extra map[string]any `json:"extra,omitempty"`
}

// newOffering returns an Offering holding the defaults of the Python
// agent's model; decoding starts from it (see newRoot).
func newOffering() Offering {
	return Offering{
		WebsocketUseTLS:           true,
		VerifySSL:                 true,
		UsernameManagementBackend: defaultUsernameBackend,
		StompWSPath:               defaultSTOMPPath,
		BackendSettings:           map[string]any{},
		BackendComponents:         map[string]BackendComponent{},
	}
}

func newBackendComponent() BackendComponent {
	return BackendComponent{UnitFactor: defaultUnitFactor}
}

// normalize spells values as the Python agent does: a trailing "/" on the
// API URL and a lower-case backend type. A null backend_settings or
// backend_components is an empty mapping.
func (o *Offering) normalize() {
	if hasHTTPScheme(o.WaldurAPIURL) && !strings.HasSuffix(o.WaldurAPIURL, "/") {
		o.WaldurAPIURL += "/"
	}
	o.BackendType = strings.ToLower(o.BackendType)
	if o.BackendSettings == nil {
		o.BackendSettings = map[string]any{}
	}
	if o.BackendComponents == nil {
		o.BackendComponents = map[string]BackendComponent{}
	}
}

// OfferingUUIDHex returns the offering UUID as 32 lower-case hex digits,
// the form used in STOMP queue names and for comparing offerings. It
// accepts what Python's uuid.UUID accepts: dashes, braces, a urn:uuid:
// prefix. It returns "" for a value that is not a UUID.
func (o *Offering) OfferingUUIDHex() string {
	return uuidHex(o.WaldurOfferingUUID)
}

// uuidNoise is what uuidHex strips. A Replacer is safe for concurrent use,
// so one is built for the process: the STOMP bridge asks for an offering's
// hex UUID on every frame.
var uuidNoise = strings.NewReplacer("urn:", "", "uuid:", "", "-", "")

func uuidHex(s string) string {
	h := uuidNoise.Replace(strings.TrimSpace(s))
	h = strings.ToLower(strings.Trim(h, "{}"))
	if len(h) != 32 {
		return ""
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return h
}

// ObservableObjectTypes lists the STOMP object types the offering subscribes
// to, in the order and under the conditions of the Python agent's
// _determine_observable_object_types.
func (o *Offering) ObservableObjectTypes() []string {
	var types []string
	if o.OrderProcessingBackend != "" {
		types = append(types, "order", "resource_api_key_rotation")
	}
	// Here an unset stomp_membership_sync_enabled counts as true: the
	// function only runs for STOMP-enabled offerings.
	if o.MembershipSyncBackend != "" && (o.StompMembershipSyncEnabled == nil || *o.StompMembershipSyncEnabled) {
		types = append(types, "user_role", "resource", "service_account", "course_account",
			"offering_user", "offering_resources_sync")
	}
	if o.ResourceImportEnabled {
		types = append(types, "importable_resources")
	}
	if o.periodicLimitsEnabled() {
		types = append(types, "resource_periodic_limits")
	}
	return types
}

// periodicLimitsEnabled reads backend_settings.periodic_limits.enabled.
func (o *Offering) periodicLimitsEnabled() bool {
	pl, ok := o.BackendSettings["periodic_limits"].(map[string]any)
	if !ok {
		return false
	}
	enabled, _ := pl["enabled"].(bool)
	return enabled
}

// MembershipViaSTOMP reports whether membership changes arrive over STOMP,
// in which case the membership_sync polling loop skips the offering.
func (o *Offering) MembershipViaSTOMP() bool {
	if o.StompMembershipSyncEnabled != nil {
		return *o.StompMembershipSyncEnabled
	}
	return o.StompEnabled
}

// STOMPEndpoint returns where the offering's STOMP-over-websocket
// connection goes. The host defaults to the host of waldur_api_url.
//
// The port defaults to 443 with TLS and 80 without. The Python agent picks
// it from verify_ssl instead (a QUIRK): a port that contradicts the TLS
// setting can never have worked, so no working config depends on it.
func (o *Offering) STOMPEndpoint() (host string, port int, path string, useTLS bool) {
	host = o.StompWSHost
	if host == "" {
		if u, err := url.Parse(o.WaldurAPIURL); err == nil {
			host = u.Hostname()
		}
	}
	port = o.StompWSPort
	if port == 0 {
		port = 80
		if o.WebsocketUseTLS {
			port = 443
		}
	}
	path = o.StompWSPath
	if path == "" {
		path = defaultSTOMPPath
	}
	return host, port, path, o.WebsocketUseTLS
}
