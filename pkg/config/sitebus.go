package config

import "time"

// Sitebus holds the settings of the top-level "sitebus:" section. The
// Python agent would reject this key; files shared with it must leave the
// section out, and then every value here takes its default.
type Sitebus struct {
	NATSURL   string        `json:"nats_url,omitempty"` // "" = run an embedded NATS server
	DataDir   string        `json:"data_dir"`
	HTTPAddr  string        `json:"http_addr"`  // metrics and health probes
	LogFormat string        `json:"log_format"` // "json" or "text"
	Stomp     StompSettings `json:"stomp"`

	// Periods override Root.Periods key by key; a zero field is unset.
	Periods Periods `json:"periods"`
	// KeycloakPendingPeriod is how often memberships of users not yet in
	// Keycloak are retried (periods.keycloak_pending_period; default 15m).
	KeycloakPendingPeriod time.Duration `json:"keycloak_pending_period,omitempty"`
	// KeycloakCleanupPeriod is how often keycloak-sync removes the groups
	// of this deployment's offerings whose resources are gone
	// (periods.keycloak_cleanup_period; default 1h, at least 10s).
	KeycloakCleanupPeriod time.Duration `json:"keycloak_cleanup_period"`
	// ClusterPullPeriod is how often the cluster-provisioner pulls every
	// cluster it made from Rancher and OpenStack and repairs what drifted
	// (periods.cluster_pull_period; default 15m, at least 10s), as
	// Mastermind's pull_clusters and pull_cluster_nodes.
	ClusterPullPeriod time.Duration `json:"cluster_pull_period"`
	// ClusterReadyTimeout bounds a cluster create's wait for its VMs, its
	// nodes and the Rancher cluster to be active; past it the order errs
	// and the cluster is kept (periods.cluster_ready_timeout; default
	// 60m, at least 10s).
	ClusterReadyTimeout time.Duration `json:"cluster_ready_timeout"`
	// DriftPeriod is how often the drift pass compares what Waldur says
	// each resource should be with its platform object and repairs what
	// sitebus manages (periods.drift_period; default 30m, at least 10s).
	DriftPeriod time.Duration `json:"drift_period"`
	// ClusterVMConcurrency is how many VMs of one cluster create the
	// cluster-provisioner makes at once (cluster_vm_concurrency; default
	// 5, a zone's nodes in a usual plan, 1 to 50). Mastermind creates a
	// cluster's servers in parallel; the cap keeps one large order from
	// flooding an OpenStack API that other tenants share.
	ClusterVMConcurrency int `json:"cluster_vm_concurrency"`
	// SagaLease is how long a saga coordinator owns a saga without renewing
	// it; another coordinator takes over a dead one's sagas after it
	// (periods.saga_lease; default 6s).
	SagaLease time.Duration `json:"saga_lease,omitempty"`

	Streams Streams `json:"streams"`
	// Ordering says how replicas of one service keep the events of one
	// Waldur resource in order.
	Ordering Ordering `json:"ordering"`

	// Services lists the services to run in this process; empty = all.
	Services []string `json:"services,omitempty"`

	// StatusPage is the operator's page at /status on HTTPAddr.
	StatusPage StatusPage `json:"status_page"`
}

// StatusPage configures the operator's status page served beside the
// probes and metrics.
type StatusPage struct {
	// Token is the bearer token the page asks for when http_addr is not a
	// loopback address (the chart binds 0.0.0.0, so anyone in the cluster
	// could read it); without a token the page is off there. On loopback
	// the page is open, like the CLI tools on the same host.
	Token Secret `json:"token,omitempty"`
	// CheckPeriod is how often the process holding the STOMP connection
	// runs the health checks (Waldur, backends, Keycloak) for the page, so
	// a page load never calls a peer. Default 1m, at least 10s.
	CheckPeriod time.Duration `json:"check_period"`
}

// StompSettings tune the connection to Waldur's STOMP broker.
type StompSettings struct {
	// Transport is "websocket" (what the Python agent uses) or "tcp"
	// (plain STOMP, when the broker's TCP listener is reachable).
	Transport string `json:"transport"`
	// TCPHost is the host for the tcp transport; "" = each offering's
	// STOMP websocket host.
	TCPHost       string        `json:"tcp_host,omitempty"`
	TCPPort       int           `json:"tcp_port"`
	PrefetchCount int           `json:"prefetch_count"`
	ReconnectMax  time.Duration `json:"reconnect_max"` // cap of the reconnect backoff
	Heartbeat     time.Duration `json:"heartbeat"`
	// MaxFrameBody is the largest frame body, in bytes, the bridge takes
	// as an event; a larger one is dead-lettered ("frame body exceeds N
	// bytes") with its first bytes only, and acked.
	MaxFrameBody int `json:"max_frame_body"`
}

// Streams configure retention of the JetStream streams.
type Streams struct {
	EventsMaxAge time.Duration `json:"events_max_age"`
	// DuplicateWindow must outlast a STOMP reconnect storm, so that frames
	// redelivered after a reconnect are still recognised as duplicates.
	DuplicateWindow time.Duration `json:"duplicate_window"`
	DLQMaxAge       time.Duration `json:"dlq_max_age"`
	// SagaRetention is how long a finished saga stays in the saga bucket.
	// While it is there a redelivered or replayed order finds it and does
	// not run again, so it is at least EventsMaxAge.
	SagaRetention time.Duration `json:"saga_retention"`
	// Replicas is how many JetStream servers keep a copy of every stream
	// and key-value bucket, 1 to 5. Default 1, with an external nats_url
	// too: more copies than the cluster has servers cannot be placed, so a
	// cluster's count is set explicitly, never guessed.
	Replicas int `json:"replicas"`
}

// Ordering modes: process keeps events of one resource in order inside one
// process (one process per service); cluster keeps them in order across
// every replica of a service, at the cost of a bounded number of messages
// in flight (one per slot).
const (
	OrderingProcess = "process"
	OrderingCluster = "cluster"
)

// OrderingPartitions is how many partitions the events of each subject are
// hashed into by their ordering key (pkg/bus.Partitions, which a test there
// compares with this). Slots must divide it.
const OrderingPartitions = 256

// Ordering configures per-resource ordering (sitebus.ordering).
type Ordering struct {
	// Mode is OrderingProcess (default: one consumer per subscription, as
	// many messages in flight as the service's concurrency, in order per
	// resource within the process) or OrderingCluster (every replica of a
	// service may run: Slots consumers per subscription, each with one
	// message in flight across all replicas).
	Mode string `json:"mode"`
	// Slots is how many consumers a subscription has in cluster mode: the
	// most messages of one subscription handled at once across all
	// replicas. It divides OrderingPartitions. A message waiting for a
	// retry holds its slot, so more slots isolate a failing resource
	// better; each slot is one more JetStream consumer.
	Slots int `json:"slots"`
}

// newSitebus returns the section's defaults; decoding starts from them, so
// a key the file sets keeps its value, even "" or 0, and Validate refuses
// what cannot work instead of quietly putting the default back.
func newSitebus() Sitebus {
	return Sitebus{
		DataDir:   defaultDataDir,
		HTTPAddr:  defaultHTTPAddr,
		LogFormat: defaultLogFormat,
		Stomp: StompSettings{
			Transport:     defaultSTOMPTransport,
			TCPPort:       defaultSTOMPTCPPort,
			PrefetchCount: DefaultPrefetchCount,
			ReconnectMax:  defaultReconnectMax,
			Heartbeat:     defaultHeartbeat,
			MaxFrameBody:  defaultMaxFrameBody,
		},
		Streams: Streams{
			EventsMaxAge:    defaultEventsMaxAge,
			DuplicateWindow: defaultDuplicateWindow,
			DLQMaxAge:       defaultDLQMaxAge,
			SagaRetention:   defaultSagaRetention,
			Replicas:        defaultStreamReplicas,
		},
		Ordering:              Ordering{Mode: OrderingProcess, Slots: defaultOrderingSlots},
		KeycloakCleanupPeriod: defaultKeycloakCleanupPeriod,
		ClusterPullPeriod:     defaultClusterPullPeriod,
		ClusterReadyTimeout:   defaultClusterReadyTimeout,
		DriftPeriod:           defaultDriftPeriod,
		ClusterVMConcurrency:  defaultClusterVMConcurrency,
		StatusPage:            StatusPage{CheckPeriod: defaultStatusCheckPeriod},
	}
}

// TCPEndpoint returns the host and port of the plain-TCP STOMP listener
// for an offering: TCPHost, else the offering's websocket host.
func (s *StompSettings) TCPEndpoint(o *Offering) (host string, port int) {
	host = s.TCPHost
	if host == "" {
		host, _, _, _ = o.STOMPEndpoint()
	}
	port = s.TCPPort
	if port == 0 {
		port = defaultSTOMPTCPPort
	}
	return host, port
}
