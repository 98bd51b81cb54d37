package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	_ "time/tzdata" // timezone checks must not depend on the host having zoneinfo
)

// Validate checks the whole configuration and returns every problem at
// once (joined with errors.Join), each naming its file, line, offering and
// key. Parse calls it after applying defaults.
func (r *Root) Validate() error {
	return Join(r.validate())
}

func (r *Root) validate() []*FieldError {
	p := &problems{source: r.source, lines: r.lines}
	top := scope{}

	if len(r.Offerings) == 0 {
		p.at(top.key("offerings"), "at least one offering is required")
	}
	if !slices.Contains(logLevels, strings.ToUpper(r.LogLevel)) {
		p.at(top.key("log_level"), "%q is not one of %s", r.LogLevel, strings.Join(logLevels, ", "))
	}
	if r.ReportingPeriods < minReportingPeriods || r.ReportingPeriods > maxReportingPeriods {
		p.at(top.key("reporting_periods"), "%d is out of range %d..%d", r.ReportingPeriods, minReportingPeriods, maxReportingPeriods)
	}
	// LoadLocation takes "" for UTC; Python's zoneinfo refuses it.
	if _, err := time.LoadLocation(r.Timezone); err != nil || r.Timezone == "" || strings.EqualFold(r.Timezone, "local") {
		p.at(top.key("timezone"), "unknown timezone %q", r.Timezone)
	}
	checkOptionalURL(p, top.key("sentry_dsn"), r.SentryDSN, false)
	checkOptionalURL(p, top.key("elastic_apm_server_url"), r.ElasticAPMServerURL, true)
	r.LogShipping.validate(p, top.key("log_shipping"))

	firstByUUID := map[string]int{}
	for i := range r.Offerings {
		o := &r.Offerings[i]
		s := offeringScope(i, o.Name)
		o.validate(p, s)
		if h := o.OfferingUUIDHex(); h != "" {
			if j, dup := firstByUUID[h]; dup {
				p.at(s.key("waldur_offering_uuid"), "%q is also the UUID of %s", o.WaldurOfferingUUID, offeringScope(j, r.Offerings[j].Name).display)
			} else {
				firstByUUID[h] = i
			}
		}
	}

	r.Sitebus.validate(p, top.key("sitebus"))
	r.validatePeriods(p)
	return p.list
}

func (l *LogShipping) validate(p *problems, s scope) {
	if l.ShipIntervalSeconds < minShipIntervalSeconds {
		p.at(s.key("ship_interval_seconds"), "%d is below the minimum of %d", l.ShipIntervalSeconds, minShipIntervalSeconds)
	}
	if l.BufferSizeMB < minShipBufferMB {
		p.at(s.key("buffer_size_mb"), "%d is below the minimum of %d", l.BufferSizeMB, minShipBufferMB)
	}
	if !slices.Contains(logLevels, strings.ToUpper(l.LogLevel)) {
		p.at(s.key("log_level"), "%q is not one of %s", l.LogLevel, strings.Join(logLevels, ", "))
	}
}

func (o *Offering) validate(p *problems, s scope) {
	switch {
	case o.WaldurAPIURL == "":
		p.at(s.key("waldur_api_url"), "is required")
	case !hasHTTPScheme(o.WaldurAPIURL):
		p.at(s.key("waldur_api_url"), "%q must start with http:// or https://", o.WaldurAPIURL)
	case !hasHost(o.WaldurAPIURL):
		p.at(s.key("waldur_api_url"), "%q has no host", o.WaldurAPIURL)
	}
	o.validateAuth(p, s)
	switch {
	case o.WaldurOfferingUUID == "":
		p.at(s.key("waldur_offering_uuid"), "is required")
	case o.OfferingUUIDHex() == "":
		p.at(s.key("waldur_offering_uuid"), "%q is not a UUID", o.WaldurOfferingUUID)
	}
	if o.BackendType == "" {
		p.at(s.key("backend_type"), "is required")
	}
	if o.StompWSPort < 0 || o.StompWSPort > 65535 {
		p.at(s.key("stomp_ws_port"), "%d is not a TCP port", o.StompWSPort)
	}
	for _, name := range o.componentNames() {
		c := o.BackendComponents[name]
		c.validate(p, s.key("backend_components").key(name))
	}
}

// validateAuth mirrors the Python agent's validate_auth_config: a static
// token, or the complete OIDC client-credentials triple.
func (o *Offering) validateAuth(p *problems, s scope) {
	oidc := map[string]bool{
		"oidc_token_url":     o.OIDCTokenURL != "",
		"oidc_client_id":     o.OIDCClientID != "",
		"oidc_client_secret": o.OIDCClientSecret != "",
	}
	var set, missing []string
	for _, k := range []string{"oidc_token_url", "oidc_client_id", "oidc_client_secret"} {
		if oidc[k] {
			set = append(set, k)
		} else {
			missing = append(missing, k)
		}
	}
	switch {
	case len(set) > 0 && len(missing) > 0:
		p.at(s.key(missing[0]), "oidc_token_url, oidc_client_id and oidc_client_secret must be set together; missing %s", strings.Join(missing, ", "))
	case len(set) == 0 && o.WaldurAPIToken == "":
		p.at(s.key("waldur_api_token"), "either waldur_api_token or all of oidc_token_url, oidc_client_id, oidc_client_secret must be set")
	}
	if o.StompEnabled && o.WaldurAPIToken == "" && len(set) == 3 {
		// The broker password of an event subscription is the user's API
		// token; an OIDC access token is not accepted there.
		p.at(s.key("stomp_enabled"), "STOMP needs waldur_api_token (it is the broker password); with OIDC only, set stomp_enabled: false and orders are polled")
	}
	if o.OIDCTokenURL != "" && !hasHTTPScheme(o.OIDCTokenURL) {
		p.at(s.key("oidc_token_url"), "%q must start with http:// or https://", o.OIDCTokenURL)
	}
}

// componentNames returns the component keys in file order, then any that
// were added in code without ComponentOrder, so each is checked once.
func (o *Offering) componentNames() []string {
	names := slices.Clone(o.ComponentOrder)
	var rest []string
	for k := range o.BackendComponents {
		if !slices.Contains(names, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

var (
	accountingTypes = []string{"usage", "limit", "one"}
	limitPeriods    = []string{"annual", "month", "quarterly", "total"}
)

func (c *BackendComponent) validate(p *problems, s scope) {
	// measured_unit and label may be "" (Python's model takes any string);
	// a missing one is reported while decoding.
	if !slices.Contains(accountingTypes, c.AccountingType) {
		p.at(s.key("accounting_type"), "%q is not one of %s", c.AccountingType, strings.Join(accountingTypes, ", "))
	}
	if lp, ok := c.Extra["limit_period"]; ok && lp != nil {
		if v, _ := lp.(string); !slices.Contains(limitPeriods, v) {
			p.at(s.key("limit_period"), "%v is not one of %s", lp, strings.Join(limitPeriods, ", "))
		}
	}
}

var (
	logFormats      = []string{"json", "text"}
	orderingModes   = []string{OrderingProcess, OrderingCluster}
	stompTransports = []string{"websocket", "tcp"}
)

func (sb *Sitebus) validate(p *problems, s scope) {
	if !slices.Contains(logFormats, sb.LogFormat) {
		p.at(s.key("log_format"), "%q is not one of %s", sb.LogFormat, strings.Join(logFormats, ", "))
	}
	if sb.DataDir == "" {
		p.at(s.key("data_dir"), "must not be empty")
	}
	if _, _, err := net.SplitHostPort(sb.HTTPAddr); err != nil {
		p.at(s.key("http_addr"), "%q is not a host:port address", sb.HTTPAddr)
	}
	seen := map[string]bool{}
	for i, name := range sb.Services {
		switch {
		case strings.TrimSpace(name) == "":
			p.at(s.key("services").index(i), "must not be empty")
		case seen[name]:
			p.at(s.key("services").index(i), "%q is listed twice", name)
		}
		seen[name] = true
	}

	if sb.ClusterVMConcurrency < 1 || sb.ClusterVMConcurrency > maxClusterVMConcurrency {
		p.at(s.key("cluster_vm_concurrency"), "%d is out of range 1..%d (VMs a cluster create makes at once; 1 makes them one after another)",
			sb.ClusterVMConcurrency, maxClusterVMConcurrency)
	}

	periods := s.key("periods")
	for _, d := range []struct {
		at       scope
		v, least time.Duration
	}{
		{periods.key("keycloak_cleanup_period"), sb.KeycloakCleanupPeriod, minKeycloakCleanupPeriod},
		{periods.key("cluster_pull_period"), sb.ClusterPullPeriod, minClusterPullPeriod},
		{periods.key("cluster_ready_timeout"), sb.ClusterReadyTimeout, minClusterReadyTimeout},
		{periods.key("drift_period"), sb.DriftPeriod, minDriftPeriod},
		{s.key("status_page").key("check_period"), sb.StatusPage.CheckPeriod, minStatusCheckPeriod},
	} {
		if d.v < d.least {
			p.at(d.at, "%s is shorter than the minimum of %s", d.v, d.least)
		}
	}

	st, ss := &sb.Stomp, s.key("stomp")
	if !slices.Contains(stompTransports, st.Transport) {
		p.at(ss.key("transport"), "%q is not one of %s", st.Transport, strings.Join(stompTransports, ", "))
	}
	if st.TCPPort < 1 || st.TCPPort > 65535 {
		p.at(ss.key("tcp_port"), "%d is not a TCP port", st.TCPPort)
	}
	if st.PrefetchCount < 1 {
		p.at(ss.key("prefetch_count"), "%d must be at least 1", st.PrefetchCount)
	}
	positive(p, ss.key("reconnect_max"), st.ReconnectMax)
	positive(p, ss.key("heartbeat"), st.Heartbeat)
	if st.MaxFrameBody < minMaxFrameBody || st.MaxFrameBody > maxMaxFrameBody {
		p.at(ss.key("max_frame_body"), "%d is not between %d and %d bytes", st.MaxFrameBody, minMaxFrameBody, maxMaxFrameBody)
	}

	sm, ms := &sb.Streams, s.key("streams")
	positive(p, ms.key("events_max_age"), sm.EventsMaxAge)
	positive(p, ms.key("dlq_max_age"), sm.DLQMaxAge)
	if sm.SagaRetention < sm.EventsMaxAge {
		// A replayed or redelivered order event finds its finished saga
		// and does not run it again only while the saga is kept.
		p.at(ms.key("saga_retention"), "%s is shorter than events_max_age (%s): an order replayed from the events stream would run its saga again", sm.SagaRetention, sm.EventsMaxAge)
	}
	if sm.DuplicateWindow < minDuplicateWindow {
		p.at(ms.key("duplicate_window"), "%s is shorter than the minimum of %s", sm.DuplicateWindow, minDuplicateWindow)
	}
	if sm.Replicas < 1 || sm.Replicas > maxStreamReplicas {
		p.at(ms.key("replicas"), "%d is not a replica count: 1 to %d (copies of each stream on as many JetStream servers)", sm.Replicas, maxStreamReplicas)
	}

	o, osc := &sb.Ordering, s.key("ordering")
	if !slices.Contains(orderingModes, o.Mode) {
		p.at(osc.key("mode"), "%q is not one of %s", o.Mode, strings.Join(orderingModes, ", "))
	}
	if o.Slots < 1 || o.Slots > OrderingPartitions || OrderingPartitions%o.Slots != 0 {
		p.at(osc.key("slots"), "%d does not divide the %d partitions: use 1, 2, 4, 8, 16, 32, 64, 128 or 256", o.Slots, OrderingPartitions)
	}
}

// validatePeriods reports a negative override at its sitebus.periods key
// and any other unusable effective period under "periods".
func (r *Root) validatePeriods(p *problems) {
	ps := scope{}.key("sitebus").key("periods")
	for _, f := range []struct {
		key            string
		override, eff  time.Duration
		effectiveLabel string
	}{
		{"order_process_period", r.Sitebus.Periods.OrderProcess, r.Periods.OrderProcess, "order_process"},
		{"report_period", r.Sitebus.Periods.Report, r.Periods.Report, "report"},
		{"membership_sync_period", r.Sitebus.Periods.MembershipSync, r.Periods.MembershipSync, "membership_sync"},
		{"reconciliation_period", r.Sitebus.Periods.Reconciliation, r.Periods.Reconciliation, "reconciliation"},
	} {
		switch {
		case f.override < 0:
			p.at(ps.key(f.key), "%s must be positive", f.override)
		case f.eff <= 0:
			p.at(scope{}.key("periods").key(f.effectiveLabel), "%s must be positive", f.eff)
		}
	}
}

func positive(p *problems, s scope, d time.Duration) {
	if d <= 0 {
		p.at(s, "%s must be positive", d)
	}
}

func hasHTTPScheme(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

func hasHost(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host != ""
}

// checkOptionalURL accepts "" (the Python agent treats it as null) and
// otherwise requires an absolute URL with a host. quote is false for URLs
// that carry a key (a Sentry DSN), which must not end up in a message.
func checkOptionalURL(p *problems, s scope, raw string, quote bool) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if !quote {
			p.at(s, "is not a URL")
			return
		}
		p.at(s, "%s", fmt.Sprintf("%q is not a URL", raw))
	}
}
