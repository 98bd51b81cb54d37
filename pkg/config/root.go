package config

import (
	"slices"
	"strings"
	"time"
)

// DefaultPrefetchCount is how many unacked STOMP frames the broker may
// send one subscription. Each frame waits for JetStream to store it before
// it is acked, and the server answers a publish only after it has stored
// (and synced) a batch of them, so a deeper window means fewer syncs per
// event. BenchmarkIngest in services/stompbridge, old and new alternated
// on a quiet machine: a mean ratio to raw JetStream of 0.79 at 64 and
// 0.81 at 256 (0.74-0.83 against 0.80-0.88 under load). Waldur's events
// are a few hundred bytes, so 256 of them are well under a megabyte.
const DefaultPrefetchCount = 256

// Defaults of the Python agent (common/structures.py), kept identical so a
// file behaves the same under both agents.
const (
	defaultTimezone         = "UTC"
	defaultLogLevel         = "INFO"
	defaultReportingPeriods = 2
	defaultShipInterval     = 60
	defaultShipBufferMB     = 1
	defaultShipLogLevel     = "WARNING"
	defaultUsernameBackend  = "base"
	defaultSTOMPPath        = "/rmqws-stomp"
	defaultUnitFactor       = 1.0
	minShipIntervalSeconds  = 10
	minShipBufferMB         = 1
	minReportingPeriods     = 1
	maxReportingPeriods     = 12
	defaultDataDir          = "./sitebus-data"
	defaultHTTPAddr         = "127.0.0.1:9090"
	defaultLogFormat        = "json"
	defaultSTOMPTransport   = "websocket"
	defaultSTOMPTCPPort     = 61613
	// A Waldur event is a few hundred bytes; 1 MiB leaves room for any
	// real one while a frame's body, held in memory up to prefetch_count
	// times at once, stays small. The most is what the bridge's
	// WebSocket reads in one message (16 MiB) less room for the headers.
	defaultMaxFrameBody      = 1 << 20
	minMaxFrameBody          = 1 << 10
	maxMaxFrameBody          = 15 << 20
	defaultReconnectMax      = 120 * time.Second
	defaultHeartbeat         = 10 * time.Second
	defaultEventsMaxAge      = 168 * time.Hour
	defaultDuplicateWindow   = 15 * time.Minute
	minDuplicateWindow       = 10 * time.Minute
	defaultDLQMaxAge         = 720 * time.Hour
	defaultSagaRetention     = 720 * time.Hour
	defaultStreamReplicas    = 1
	maxStreamReplicas        = 5 // JetStream's limit
	defaultOrderingSlots     = 32
	defaultOrderProcessMins  = 5
	defaultReportMins        = 30
	defaultMembershipMins    = 5
	defaultReconciliationMin = 60
	// The shortest periods the keycloak-sync service and the saga
	// coordinator accept; checked here so that `config check` refuses
	// what `run` would.
	minKeycloakPendingPeriod = time.Second
	minSagaLease             = 300 * time.Millisecond
	// The leftover-group cleanup lists every resource of the realm's
	// offerings from Waldur: more often than every 10 s only loads Waldur.
	defaultKeycloakCleanupPeriod = time.Hour
	minKeycloakCleanupPeriod     = 10 * time.Second
	// A drift pass reads every resource from Waldur and its object from
	// the platform: more often than every 10 s only loads them.
	defaultDriftPeriod = 30 * time.Minute
	minDriftPeriod     = 10 * time.Second
	// The status page's checks call Waldur, the backends and Keycloak:
	// more often than every 10 s only loads them.
	defaultStatusCheckPeriod = time.Minute
	minStatusCheckPeriod     = 10 * time.Second
	// A cluster pass reads every cluster's nodes from Rancher and every
	// zone's servers: more often than every 10 s only loads them.
	defaultClusterPullPeriod   = 15 * time.Minute
	minClusterPullPeriod       = 10 * time.Second
	defaultClusterReadyTimeout = time.Hour
	minClusterReadyTimeout     = 10 * time.Second
	// VMs a cluster create makes at once: 1 is one after another; more
	// than 50 requests at once from one order only meet OpenStack's API
	// rate limits.
	defaultClusterVMConcurrency = 5
	maxClusterVMConcurrency     = 50
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

	logLevelFrom string         // see LogLevelSource
	source       string         // file name, for messages from Validate
	lines        map[string]int // canonical key path -> line, for messages from Validate
	warns        []*FieldError  // unknown keys, see Warnings
}

// Warnings lists what Parse ignored (unknown keys), each naming its file,
// line, offering and key, for `sitebus run` to log and `sitebus config
// check` to print.
func (r *Root) Warnings() []*FieldError { return r.warns }

// LogShipping configures posting the agent's own logs to Waldur.
type LogShipping struct {
	Enabled             bool   `json:"enabled"`
	ShipIntervalSeconds int    `json:"ship_interval_seconds"`
	BufferSizeMB        int    `json:"buffer_size_mb"`
	LogLevel            string `json:"log_level"`
}

// newRoot returns a Root holding every default; decoding starts from it
// and only overwrites the keys the file has, so a missing key takes the
// default and a present one keeps its value, even "" or 0, as the Python
// agent's pydantic models do (Validate then refuses the unusable ones).
func newRoot() *Root {
	return &Root{
		Timezone:                  defaultTimezone,
		LogLevel:                  defaultLogLevel,
		ReportingPeriods:          defaultReportingPeriods,
		ExposeBackendErrorDetails: true,
		LogShipping: LogShipping{
			ShipIntervalSeconds: defaultShipInterval,
			BufferSizeMB:        defaultShipBufferMB,
			LogLevel:            defaultShipLogLevel,
		},
		Sitebus: newSitebus(),
	}
}

// normalize spells values the way the Python agent does (upper-cased log
// levels, see also Offering.normalize). It fills no defaults: those are
// in place before decoding.
func (r *Root) normalize() {
	r.LogLevel = normalizeLevel(r.LogLevel)
	r.LogShipping.LogLevel = normalizeLevel(r.LogShipping.LogLevel)
	for i := range r.Offerings {
		r.Offerings[i].normalize()
	}
	r.Periods.setDefaults()
}

// normalizeLevel upper-cases a valid level as the Python agent does; an
// invalid one (also "") is left as written so that Validate quotes it.
func normalizeLevel(v string) string {
	if up := strings.ToUpper(v); slices.Contains(logLevels, up) {
		return up
	}
	return v
}
