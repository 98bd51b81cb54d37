package config

import (
	"slices"
	"strings"
	"time"
)

// Defaults of the Python agent (common/structures.py), kept identical so a
// file behaves the same under both agents.
const (
	defaultTimezone          = "UTC"
	defaultLogLevel          = "INFO"
	defaultReportingPeriods  = 2
	defaultShipInterval      = 60
	defaultShipBufferMB      = 1
	defaultShipLogLevel      = "WARNING"
	defaultUsernameBackend   = "base"
	defaultSTOMPPath         = "/rmqws-stomp"
	defaultUnitFactor        = 1.0
	minShipIntervalSeconds   = 10
	minShipBufferMB          = 1
	minReportingPeriods      = 1
	maxReportingPeriods      = 12
	defaultDataDir           = "./sitebus-data"
	defaultHTTPAddr          = "127.0.0.1:9090"
	defaultLogFormat         = "json"
	defaultSTOMPTransport    = "websocket"
	defaultSTOMPTCPPort      = 61613
	defaultPrefetchCount     = 64
	defaultReconnectMax      = 120 * time.Second
	defaultHeartbeat         = 10 * time.Second
	defaultEventsMaxAge      = 168 * time.Hour
	defaultDuplicateWindow   = 15 * time.Minute
	minDuplicateWindow       = 10 * time.Minute
	defaultDLQMaxAge         = 720 * time.Hour
	defaultOrderProcessMins  = 5
	defaultReportMins        = 30
	defaultMembershipMins    = 5
	defaultReconciliationMin = 60
)

// logLevels are the levels the Python agent accepts, in its spelling.
var logLevels = []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}

// Root is a whole configuration file: the Python agent's keys plus the
// sitebus-only section, and the polling periods taken from the environment.
type Root struct {
	Offerings                 []Offering  `json:"offerings"`
	SentryDSN                 string      `json:"sentry_dsn,omitempty"`
	ElasticAPMServerURL       string      `json:"elastic_apm_server_url,omitempty"`
	Timezone                  string      `json:"timezone"`
	GlobalProxy               string      `json:"global_proxy,omitempty"`
	LogLevel                  string      `json:"log_level"`
	ReportingPeriods          int         `json:"reporting_periods"`
	ExposeBackendErrorDetails bool        `json:"expose_backend_error_details"`
	LogShipping               LogShipping `json:"log_shipping"`

	// Sitebus holds the settings of the "sitebus:" section, which the
	// Python agent does not know.
	Sitebus Sitebus `json:"sitebus"`

	// Periods are the effective polling periods: the defaults, overridden
	// by the WALDUR_SITE_AGENT_*_PERIOD_MINUTES variables, overridden by
	// sitebus.periods.
	Periods Periods `json:"periods"`

	source string         // file name, for messages from Validate
	lines  map[string]int // canonical key path -> line, for messages from Validate
}

// LogShipping configures posting the agent's own logs to Waldur.
type LogShipping struct {
	Enabled             bool   `json:"enabled"`
	ShipIntervalSeconds int    `json:"ship_interval_seconds"`
	BufferSizeMB        int    `json:"buffer_size_mb"`
	LogLevel            string `json:"log_level"`
}

// newRoot returns a Root holding the defaults that Go's zero values cannot
// express (a bool that defaults to true); decoding starts from it.
func newRoot() *Root {
	return &Root{ExposeBackendErrorDetails: true}
}

// setDefaults fills unset values and normalises spelling the way the Python
// agent does (upper-cased log levels).
func (r *Root) setDefaults() {
	if r.Timezone == "" {
		r.Timezone = defaultTimezone
	}
	r.LogLevel = normalizeLevel(r.LogLevel, defaultLogLevel)
	if r.ReportingPeriods == 0 {
		r.ReportingPeriods = defaultReportingPeriods
	}
	r.LogShipping.setDefaults()
	for i := range r.Offerings {
		r.Offerings[i].setDefaults()
	}
	r.Sitebus.setDefaults()
	r.Periods.setDefaults()
}

func (l *LogShipping) setDefaults() {
	if l.ShipIntervalSeconds == 0 {
		l.ShipIntervalSeconds = defaultShipInterval
	}
	if l.BufferSizeMB == 0 {
		l.BufferSizeMB = defaultShipBufferMB
	}
	l.LogLevel = normalizeLevel(l.LogLevel, defaultShipLogLevel)
}

// normalizeLevel upper-cases a valid level as the Python agent does; an
// invalid one is left as written so that Validate quotes the user's text.
func normalizeLevel(v, def string) string {
	if v == "" {
		return def
	}
	if up := strings.ToUpper(v); slices.Contains(logLevels, up) {
		return up
	}
	return v
}
