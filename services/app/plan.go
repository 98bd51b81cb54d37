package app

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/keycloaksync"
)

// supportedBackends are the backend names (the Python plugins' entry
// points) sitebus implements so far.
var supportedBackends = []string{managedns.Type, rancher.Type, okd.Type, ranchercluster.Type, vcluster.Type}

// usernameBackends are the username_management_backend names sitebus
// accepts: "base" generates no usernames, which is all sitebus does.
var usernameBackends = []string{"base"}

// Plan is a configuration file as sitebus runs it: loaded and validated,
// with every offering's Waldur client settings, backend settings and
// Keycloak block parsed. `sitebus run` builds its services from a Plan and
// `sitebus config check` prints one; both get it from LoadPlan, so a file
// the check accepts is one run accepts, with the same messages.
type Plan struct {
	Config    *config.Root
	Offerings []OfferingPlan
	// Warnings are what sitebus ignores (unknown keys of the file, of
	// backend_settings and of the keycloak block), each naming its file,
	// line, offering and key.
	Warnings []*config.FieldError
}

// OfferingPlan is one offering with its settings parsed.
type OfferingPlan struct {
	Config *config.Offering
	// Waldur reaches the offering's Waldur; Run adds logging, the user
	// agent and instrumentation.
	Waldur waldur.Config
	// ManagedNS are the backend_settings of a k8s-ut-namespace offering.
	ManagedNS managedns.Settings
	// Rancher are the backend_settings of a rancher offering.
	Rancher rancher.Settings
	// OKD are the backend_settings of an okd offering.
	OKD okd.Settings
	// RancherCluster are the backend_settings of a rancher-cluster
	// offering (the cluster-provisioner's).
	RancherCluster ranchercluster.Settings
	// VCluster are the backend_settings of a vcluster offering.
	VCluster vcluster.Settings
	// Keycloak is backend_settings.keycloak when keycloak_enabled is true;
	// nil otherwise.
	Keycloak *keycloak.Config
}

// LoadPlan reads the configuration file at path (secrets and periods from
// the process environment) and checks it as a whole. On error the Plan is
// nil and the error joins every problem (and the warnings next to them).
func LoadPlan(path string) (*Plan, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return NewPlan(cfg)
}

// NewPlan checks what config.Parse cannot know about a loaded file: that
// each backend is one sitebus implements, each backend's settings and the
// Keycloak block, each offering's Waldur client, and the service names.
func NewPlan(cfg *config.Root) (*Plan, error) {
	p := &Plan{Config: cfg}
	list := slices.Clone(cfg.Warnings())
	for i, name := range cfg.Sitebus.Services {
		if strings.TrimSpace(name) != "" && !slices.Contains(ServiceNames, name) {
			list = append(list, cfg.Problem(fmt.Sprintf("sitebus.services[%d]", i),
				"%q is not a service (known: %s)", name, strings.Join(ServiceNames, ", ")))
		}
	}
	for i := range cfg.Offerings {
		op, err := planOffering(&cfg.Offerings[i], cfg.GlobalProxy)
		list = append(list, cfg.OfferingProblems(i, err)...)
		p.Offerings = append(p.Offerings, op)
	}
	list = distinct(list)
	if err := config.Join(list); err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.Warning {
			p.Warnings = append(p.Warnings, e)
		}
	}
	return p, nil
}

// planOffering parses one offering's settings. The error joins every
// problem and warning, each a *config.SettingError where it has a key.
func planOffering(o *config.Offering, proxy string) (OfferingPlan, error) {
	op := OfferingPlan{Config: o}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	supported := true
	if !slices.Contains(supportedBackends, o.BackendType) {
		supported = false
		bad("backend_type", "%q is not supported (supported: %s)", o.BackendType, strings.Join(supportedBackends, ", "))
	}
	// An empty entry point disables the mode; any other must be a backend
	// sitebus has, or the mode would silently do nothing.
	for _, m := range []struct{ key, name string }{
		{"order_processing_backend", o.OrderProcessingBackend},
		{"membership_sync_backend", o.MembershipSyncBackend},
		{"reporting_backend", o.ReportingBackend},
	} {
		if m.name != "" && !slices.Contains(supportedBackends, m.name) {
			bad(m.key, "%q is not supported (supported: %s; \"\" disables it)", m.name, strings.Join(supportedBackends, ", "))
		}
	}
	if n := o.UsernameManagementBackend; n != "" && !slices.Contains(usernameBackends, n) {
		bad("username_management_backend", "%q is not supported (supported: %s)", n, strings.Join(usernameBackends, ", "))
	}

	// Every backend the offering names reads the same backend_settings,
	// as the Python agent hands each plugin the one block.
	names := map[string]bool{}
	for _, n := range []string{o.BackendType, o.OrderProcessingBackend, o.MembershipSyncBackend, o.ReportingBackend} {
		if supported && slices.Contains(supportedBackends, n) {
			names[n] = true
		}
	}
	if names[managedns.Type] {
		s, err := managedns.ParseSettings(o.BackendSettings)
		errs = append(errs, err)
		errs = append(errs, s.Warnings...)
		op.ManagedNS = s
	}
	if names[rancher.Type] {
		s, err := rancher.DecodeSettings(o.BackendSettings)
		errs = append(errs, err)
		errs = append(errs, s.Warnings...)
		op.Rancher = s
	}
	if names[okd.Type] {
		s, err := okd.DecodeSettings(o.BackendSettings)
		errs = append(errs, err)
		errs = append(errs, s.Warnings...)
		op.OKD = s
	}
	if names[ranchercluster.Type] {
		s, err := ranchercluster.DecodeSettings(o.BackendSettings)
		errs = append(errs, err)
		errs = append(errs, s.Warnings...)
		op.RancherCluster = s
	}
	if names[vcluster.Type] {
		s, err := vcluster.DecodeSettings(o.BackendSettings)
		errs = append(errs, err)
		errs = append(errs, s.Warnings...)
		op.VCluster = s
	}
	// keycloak_enabled and the keycloak block belong to backend_settings
	// whatever the backend (the Python Rancher and OKD plugins read them
	// too); keycloaksync.Settings is the one parser of the block, and the
	// Rancher backend is handed its result so both use the same values.
	kc, enabled, err := keycloaksync.Settings(o)
	errs = append(errs, err)
	if enabled {
		errs = append(errs, kc.Warnings...)
		op.Keycloak = &kc
		if names[rancher.Type] && op.Rancher.KeycloakEnabled {
			op.Rancher.Keycloak = &kc
		}
		if names[ranchercluster.Type] && op.RancherCluster.KeycloakEnabled {
			op.RancherCluster.Keycloak = &kc
		}
	}

	if names[vcluster.Type] && o.MembershipSyncBackend == vcluster.Type {
		errs = append(errs, vclusterMembershipProblems(op.VCluster, enabled)...)
	}

	op.Waldur = waldur.Config{
		APIURL: o.WaldurAPIURL,
		Token:  o.WaldurAPIToken.Reveal(),
		OIDC: waldur.OIDCConfig{
			TokenURL: o.OIDCTokenURL, ClientID: o.OIDCClientID, ClientSecret: o.OIDCClientSecret.Reveal(),
		},
		InsecureSkipVerify: !o.VerifySSL,
		Proxy:              proxy,
	}
	// Building the client is what Run does; it makes no call.
	if _, err := waldur.New(op.Waldur); err != nil {
		errs = append(errs, err)
	}
	return op, errors.Join(errs...)
}

// vclusterMembershipProblems are what a vcluster offering's member sync
// needs besides its settings: the bindings go on the imported Rancher
// cluster, and the waldur_team source's groups live in Keycloak. Without
// them the membership service would silently do nothing.
func vclusterMembershipProblems(s vcluster.Settings, keycloakEnabled bool) []error {
	var errs []error
	if !s.ImportToRancher {
		errs = append(errs, &config.SettingError{Key: "backend_settings.import_to_rancher",
			Msg: "must be true with membership_sync_backend vcluster: members are bound on the imported Rancher cluster"})
	}
	if s.MemberSource == vcluster.MemberSourceWaldurTeam && !keycloakEnabled {
		errs = append(errs, &config.SettingError{Key: "backend_settings.keycloak_enabled",
			Msg: "must be true with member_source waldur_team: the team goes into Keycloak groups (or use member_source rancher_project)"})
	}
	return errs
}

// distinct drops repeated problems: keycloak_enabled is read by both the
// backend's and the Keycloak settings.
func distinct(list []*config.FieldError) []*config.FieldError {
	seen := map[string]bool{}
	out := list[:0:0]
	for _, e := range list {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}
