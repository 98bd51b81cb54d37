package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// Defaults of Config.
const (
	DefaultAdminRole     = "admin"
	DefaultMemberRole    = "member"
	DefaultPollInterval  = 2 * time.Second
	DefaultVolumeTimeout = 10 * time.Minute
	DefaultServerTimeout = 20 * time.Minute
	DefaultDeleteTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds one HTTP call: an API behind a load
	// balancer with no backend can hold a request open forever.
	DefaultRequestTimeout = 2 * time.Minute
)

// Config is how to reach one zone's OpenStack.
type Config struct {
	// Cloud is the zone's cloud: a clouds.yaml entry (Name) or inline. An
	// inline cloud's Verify false turns TLS verification off (the settings
	// decode it true unless the cloud says verify: false; a Cloud built by
	// hand must set it).
	Cloud Cloud
	// CloudsYAML is the clouds.yaml a named Cloud is read from; "" is
	// gophercloud's search (OS_CLIENT_CONFIG_FILE, ./, ~/.config/openstack,
	// /etc/openstack).
	CloudsYAML string
	// Region, when set, overrides the cloud's region_name (the zone's
	// region).
	Region string
	// AdminRole is the role the connecting user gets on every project
	// EnsureProject makes (Mastermind's add_admin_user_to_tenant); default
	// DefaultAdminRole. MemberRole is the tenant user's; default
	// DefaultMemberRole.
	AdminRole, MemberRole string
	// PollInterval is the wait between polls of a volume or server;
	// VolumeTimeout, ServerTimeout and DeleteTimeout bound the waits for a
	// volume to be available, a server ACTIVE and a server gone.
	PollInterval                                time.Duration
	VolumeTimeout, ServerTimeout, DeleteTimeout time.Duration
	// RequestTimeout bounds each HTTP call (DefaultRequestTimeout); one
	// that runs out is retryable.
	RequestTimeout time.Duration
	// HTTPClient replaces the client built from the cloud's TLS settings
	// (tests).
	HTTPClient *http.Client
	// WrapTransport, if set, wraps the transport last, around the answer
	// guard (sitebus orders explain's dry run).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	Logger        *slog.Logger
}

func (c *Config) defaults() {
	if c.AdminRole == "" {
		c.AdminRole = DefaultAdminRole
	}
	if c.MemberRole == "" {
		c.MemberRole = DefaultMemberRole
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.VolumeTimeout <= 0 {
		c.VolumeTimeout = DefaultVolumeTimeout
	}
	if c.ServerTimeout <= 0 {
		c.ServerTimeout = DefaultServerTimeout
	}
	if c.DeleteTimeout <= 0 {
		c.DeleteTimeout = DefaultDeleteTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Client acts in one project: the credentials' (Connect) or one sitebus
// made (Scoped). Identity calls (projects, users) need the admin role.
// A Client is safe for concurrent use.
type Client struct {
	cfg  Config
	auth gophercloud.AuthOptions
	eo   gophercloud.EndpointOpts
	http http.Client
	log  *slog.Logger

	provider                                  *gophercloud.ProviderClient
	identity, compute, network, volume, image *gophercloud.ServiceClient

	projectID, userID, domainID string
}

// Connect logs in with cfg's cloud and returns a Client for the
// credentials' project. A login refused (401) or a certificate that does
// not verify is terminal.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	cfg.defaults()
	ao, eo, tlsConf, err := authOptions(cfg)
	if err != nil {
		return nil, err
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsConf
		hc.Transport = tr
	}
	if hc.Timeout == 0 {
		hc.Timeout = cfg.RequestTimeout
	}
	// gophercloud reads an answer whole without a cap, and a 200 holding a
	// service's error object (a gateway's, or a service gone wrong) fails
	// only as "expected response key not found", or not at all.
	hc.Transport = &httpbody.Guard{Next: hc.Transport, Peer: "OpenStack", ErrorObject: isErrorObject}
	if cfg.WrapTransport != nil {
		hc.Transport = cfg.WrapTransport(hc.Transport)
	}
	c := &Client{cfg: cfg, auth: ao, eo: eo, http: hc, log: cfg.Logger.With("component", "openstack")}
	if err := c.login(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// ProjectID is the project the client acts in.
func (c *Client) ProjectID() string { return c.projectID }

// UserID is the user the client logged in as.
func (c *Client) UserID() string { return c.userID }

// Scoped returns a Client acting in project, which EnsureProject made: the
// same credentials, re-authenticated with project as scope. The
// connecting user must have a role there (EnsureProject gives it one).
// Application credentials cannot be re-scoped: that is a terminal error.
// Only project.ID is needed (Name names it in errors). A project that is
// gone, or where the user has no role, refuses the login (401, terminal).
func (c *Client) Scoped(ctx context.Context, project Project) (*Client, error) {
	if project.ID == "" {
		return nil, fault.Errorf(fault.Invalid, "openstack: cannot act in project %q: no project id", project.Name)
	}
	if project.ID == c.projectID {
		return c, nil
	}
	if c.auth.ApplicationCredentialID != "" || c.auth.ApplicationCredentialName != "" {
		return nil, fault.Errorf(fault.Invalid, "openstack: cannot act in project %s (%s): the cloud logs in with an application "+
			"credential, which Keystone binds to its own project; managed mode needs a password credential of an admin user",
			project.Name, project.ID)
	}
	s := &Client{cfg: c.cfg, auth: c.auth, eo: c.eo, http: c.http, log: c.log}
	s.auth.Scope = &gophercloud.AuthScope{ProjectID: project.ID}
	// TenantID/TenantName are the v2 spelling of the scope; clear them so
	// they cannot contradict Scope.
	s.auth.TenantID, s.auth.TenantName = "", ""
	if err := s.login(ctx); err != nil {
		return nil, fmt.Errorf("act in project %s (%s): %w", project.Name, project.ID, err)
	}
	return s, nil
}

// login authenticates and builds the service clients.
func (c *Client) login(ctx context.Context) error {
	ao := c.auth
	// A long saga outlives a token: gophercloud logs in again on a 401.
	ao.AllowReauth = true
	p, err := gos.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return fault.Errorf(fault.Invalid, "openstack: auth_url %q: %v", ao.IdentityEndpoint, err)
	}
	p.HTTPClient = c.http
	if err := gos.Authenticate(ctx, p, ao); err != nil {
		return classify("log in to "+ao.IdentityEndpoint, "", err)
	}
	c.provider = p
	// The token says who logged in and where: role assignments need the
	// user, ownership the project.
	if r, ok := p.GetAuthResult().(tokens.CreateResult); ok {
		if u, err := r.ExtractUser(); err == nil && u != nil {
			c.userID, c.domainID = u.ID, u.Domain.ID
		}
		if pr, err := r.ExtractProject(); err == nil && pr != nil {
			c.projectID = pr.ID
		}
	}
	if c.userID == "" || c.projectID == "" {
		return fault.Errorf(fault.Invalid, "openstack: the token from %s is not scoped to a project: give the cloud's project_name or project_id",
			ao.IdentityEndpoint)
	}
	for _, s := range []struct {
		dst  **gophercloud.ServiceClient
		make func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)
		name string
	}{
		{&c.identity, gos.NewIdentityV3, "identity"},
		{&c.compute, gos.NewComputeV2, "compute"},
		{&c.network, gos.NewNetworkV2, "network"},
		{&c.volume, gos.NewBlockStorageV3, "volumev3"},
		{&c.image, gos.NewImageV2, "image"},
	} {
		sc, err := s.make(p, c.eo)
		if err != nil {
			return fault.Errorf(fault.Invalid, "openstack: no %s endpoint in the catalog for region %q: %v", s.name, c.eo.Region, err)
		}
		*s.dst = sc
	}
	return nil
}

// authOptions turns cfg's cloud into gophercloud's options: a named cloud
// through clouds.Parse, an inline one field by field, as clouds.Parse
// would read it.
func authOptions(cfg Config) (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	c := cfg.Cloud
	if c.Name != "" {
		opts := []clouds.ParseOption{clouds.WithCloudName(c.Name)}
		if cfg.CloudsYAML != "" {
			opts = append(opts, clouds.WithLocations(cfg.CloudsYAML))
		}
		if cfg.Region != "" {
			opts = append(opts, clouds.WithRegion(cfg.Region))
		}
		ao, eo, tc, err := clouds.Parse(opts...)
		if err != nil {
			return ao, eo, nil, fault.Errorf(fault.Invalid, "openstack: cloud %q: %v", c.Name, err)
		}
		return ao, eo, tc, nil
	}
	ao := gophercloud.AuthOptions{
		IdentityEndpoint:            c.AuthURL,
		Username:                    c.Username,
		UserID:                      c.UserID,
		Password:                    string(c.Password),
		DomainID:                    first(c.UserDomainID, c.DomainID),
		DomainName:                  first(c.UserDomainName, c.DomainName),
		ApplicationCredentialID:     c.ApplicationCredentialID,
		ApplicationCredentialName:   c.ApplicationCredentialName,
		ApplicationCredentialSecret: string(c.ApplicationCredentialSecret),
	}
	if !c.ApplicationCredential() {
		switch {
		case c.ProjectID != "":
			ao.Scope = &gophercloud.AuthScope{ProjectID: c.ProjectID}
		case c.ProjectName != "":
			ao.Scope = &gophercloud.AuthScope{ProjectName: c.ProjectName,
				DomainID: first(c.ProjectDomainID, c.DomainID), DomainName: first(c.ProjectDomainName, c.DomainName)}
			if ao.Scope.DomainID == "" && ao.Scope.DomainName == "" {
				// Keystone needs the project's domain with its name; the
				// user's is the usual one.
				ao.Scope.DomainID, ao.Scope.DomainName = ao.DomainID, ao.DomainName
			}
		}
	}
	eo := gophercloud.EndpointOpts{Region: first(cfg.Region, c.RegionName), Availability: availability(c.Interface)}
	tc := &tls.Config{InsecureSkipVerify: !c.Verify} //nolint:gosec // verify: false is the operator's explicit choice
	if c.CACert != "" {
		pem, err := os.ReadFile(c.CACert)
		if err != nil {
			return ao, eo, nil, fault.Errorf(fault.Invalid, "openstack: cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return ao, eo, nil, fault.Errorf(fault.Invalid, "openstack: cacert %s holds no PEM certificate", c.CACert)
		}
		tc.RootCAs = pool
	}
	return ao, eo, tc, nil
}

func availability(iface string) gophercloud.Availability {
	switch strings.TrimSuffix(iface, "URL") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
