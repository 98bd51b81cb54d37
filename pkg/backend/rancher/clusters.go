package rancher

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Provisioning whole clusters (issue 13's cluster-provisioner), with the
// calls Waldur Mastermind's RancherBackend makes (reference A.3–A.9):
// a v1 provisioning.cattle.io cluster (RKE2 "custom") with an optional
// private registry secret, its v3 id, a registration token, nodes, the
// drain action, rename, delete, generateKubeconfig and cluster role
// template bindings for Keycloak groups.
//
// Deliberate differences from Mastermind:
//
//   - ownership: the v1 cluster (and registry secret) sitebus creates
//     carries waldur/managed: "true" and sitebus.io/resource-uuid
//     annotations; every call that changes or deletes a cluster, its
//     nodes, tokens or bindings first checks them against the caller's
//     resource (ClusterRef) and refuses another's cluster
//     (backend.ErrNotManaged, terminal). A create whose name is taken
//     adopts the cluster only when it is this resource's (a retried
//     create), never someone else's.
//   - no fixed sleeps: the v3 id and a token's value are polled for,
//     bounded, starting at once.
//   - a missing Drained condition is "not drained yet", not a crash
//     (Mastermind's next() without a default raises StopIteration).
//   - a retried create reuses the registry secret and the registration
//     token it made before, instead of making another of each.

// Defaults for provisioned clusters.
const (
	// DefaultKubernetesVersion is Mastermind's k8s_version default.
	DefaultKubernetesVersion = "v1.31.7+rke2r1"
	// FleetNamespace is where Rancher keeps provisioning clusters and
	// their secrets.
	FleetNamespace = "fleet-default"
	// DefaultPollInterval paces the waits (v3 id, token, drain).
	DefaultPollInterval = 2 * time.Second
	// DefaultDrainWait is how long WaitDrained waits by default:
	// Mastermind's 60 s.
	DefaultDrainWait = 60 * time.Second
	// registrySecretPrefix is the generateName of the registry secret, as
	// Mastermind's and Rancher's UI.
	registrySecretPrefix = "registryconfig-auth-"
	// tokenWait bounds the wait for a new token's value.
	tokenWait = time.Minute
)

// ClusterOptions configure a ClusterClient.
type ClusterOptions struct {
	// BackendURL is Rancher's base URL (the API is BackendURL + "/v3").
	BackendURL string
	// AccessKey and SecretKey are the API key pair (HTTP basic auth).
	AccessKey string
	SecretKey config.Secret
	// VerifyCert verifies Rancher's TLS certificate.
	VerifyCert bool
	// PollInterval paces the waits; default DefaultPollInterval.
	PollInterval time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// WrapTransport, when set, wraps the HTTP transport (tracing, metrics).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// FleetWorkspace is the namespace of the v1 clusters this client
	// imports, reads and deletes; default FleetNamespace. Rancher makes a
	// v1 cluster's fleet workspace its namespace (the v3 cluster's
	// spec.fleetWorkspaceName, set by Rancher's provisioningv2 cluster
	// controller when it creates the v3 cluster): there is no spec field.
	FleetWorkspace string
}

// ClusterClient provisions and manages whole Rancher clusters.
type ClusterClient struct {
	api  *client
	log  *slog.Logger
	poll time.Duration
	// ns is ClusterOptions.FleetWorkspace.
	ns string
}

// NewClusterClient checks the options; it does not contact Rancher.
func NewClusterClient(o ClusterOptions) (*ClusterClient, error) {
	if !validBackendURL(o.BackendURL) {
		return nil, fault.Errorf(fault.Invalid, "Rancher backend_url %q is not an http(s) URL without credentials, query or fragment", o.BackendURL)
	}
	if (o.AccessKey == "") != (o.SecretKey == "") {
		return nil, fault.Errorf(fault.Invalid, "the Rancher access key and secret key go together: set both or neither")
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	log := backend.Logger(o.Logger, Type, "component", "clusters")
	base := Settings{BackendURL: o.BackendURL}.apiBase()
	return &ClusterClient{api: newAPIClient(base, o.AccessKey, o.SecretKey.Reveal(), o.VerifyCert, o.WrapTransport, log),
		log: log, poll: o.PollInterval, ns: cmp.Or(o.FleetWorkspace, FleetNamespace)}, nil
}

// Registry is a private registry the cluster's nodes pull from.
type Registry struct {
	URL      string // a host (example.com) or host:port, as Rancher's registries map keys
	Username string
	Password config.Secret
}

// ClusterSpec is what CreateProvisioningCluster makes.
type ClusterSpec struct {
	// Name is the v1 cluster's name (and the v3 cluster's first name).
	Name string
	// ResourceUUID is the Waldur resource the cluster is for; recorded in
	// the ownership annotations.
	ResourceUUID string
	// KubernetesVersion defaults to DefaultKubernetesVersion.
	KubernetesVersion string
	// Registry, when set, makes the registry auth secret and the
	// registry parts of the payload.
	Registry *Registry
}

// ClusterRef names a cluster sitebus made for a Waldur resource: by its
// v1 name, its v3 id, or both (the name is what a saga has before Rancher
// named the v3 cluster; the id is Waldur's backend_id).
type ClusterRef struct {
	Name         string
	ID           string
	ResourceUUID string
}

func (r ClusterRef) String() string {
	switch {
	case r.Name != "" && r.ID != "":
		return FleetNamespace + "/" + r.Name + " (" + r.ID + ")"
	case r.Name != "":
		return FleetNamespace + "/" + r.Name
	}
	return r.ID
}

// ProvisioningCluster is a v1 cluster as sitebus reads it.
type ProvisioningCluster struct {
	// ID is "fleet-default/<name>".
	ID, Name string
	// ClusterID is the v3 (management) id c-m-xxxxxxxx, "" until Rancher
	// made it.
	ClusterID string
	// Ready is status.ready.
	Ready bool
	// ResourceUUID is the Waldur resource it was made for ("" when not by
	// sitebus), Managed whether it carries waldur/managed: "true".
	ResourceUUID string
	Managed      bool
	// RegistrySecrets are the secrets its spec names for registry auth.
	RegistrySecrets []string
	// Created is true when this call created it (false: adopted).
	Created bool
}

// Cluster is a v3 cluster.
type Cluster struct {
	ID, Name, State, TransitioningMessage string
}

// clusterNameRe: a provisioning cluster's name (an RFC 1123 label).
var clusterNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// v1 objects, with the fields sitebus reads.
type (
	v1Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
		DeletionTimestamp string            `json:"deletionTimestamp"`
	}
	v1Cluster struct {
		ID       string     `json:"id"`
		Metadata v1Metadata `json:"metadata"`
		Spec     struct {
			RKEConfig struct {
				Registries struct {
					Configs map[string]struct {
						AuthConfigSecretName string `json:"authConfigSecretName"`
					} `json:"configs"`
				} `json:"registries"`
			} `json:"rkeConfig"`
		} `json:"spec"`
		Status struct {
			ClusterName string `json:"clusterName"`
			Ready       bool   `json:"ready"`
		} `json:"status"`
	}
	v1Secret struct {
		ID       string     `json:"id"`
		Metadata v1Metadata `json:"metadata"`
	}
	v3Cluster struct {
		ID                   string `json:"id"`
		Name                 string `json:"name"`
		State                string `json:"state"`
		TransitioningMessage string `json:"transitioningMessage"`
	}
)

func (v v1Cluster) toProvisioningCluster() ProvisioningCluster {
	p := ProvisioningCluster{ID: v.ID, Name: v.Metadata.Name, ClusterID: v.Status.ClusterName, Ready: v.Status.Ready,
		ResourceUUID: v.Metadata.Annotations[AnnotationResourceUUID], Managed: v.Metadata.Annotations[AnnotationManaged] == "true"}
	if p.ID == "" {
		p.ID = FleetNamespace + "/" + p.Name
	}
	for _, cfg := range v.Spec.RKEConfig.Registries.Configs {
		if cfg.AuthConfigSecretName != "" {
			p.RegistrySecrets = append(p.RegistrySecrets, cfg.AuthConfigSecretName)
		}
	}
	return p
}

func (c *ClusterClient) v1ClusterPath(name string) string {
	return "/v1/provisioning.cattle.io.clusters/" + c.ns + "/" + url.PathEscape(name)
}

// ownership is the metadata sitebus puts on what it creates.
func ownership(resourceUUID string) map[string]string {
	return map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: resourceUUID}
}

// ours reports whether meta carries sitebus's marks for resourceUUID.
func ours(meta v1Metadata, resourceUUID string) bool {
	return meta.Annotations[AnnotationManaged] == "true" && meta.Annotations[AnnotationResourceUUID] == resourceUUID
}

func notOurs(what string, meta v1Metadata, resourceUUID string) error {
	if meta.Annotations[AnnotationManaged] != "true" {
		return fault.Errorf(fault.NotManaged, "Rancher %s %s/%s exists and is not managed by sitebus (no %s: \"true\" annotation); refusing to touch it",
			what, meta.Namespace, meta.Name, AnnotationManaged)
	}
	return fault.Errorf(fault.NotManaged, "Rancher %s %s/%s belongs to Waldur resource %q, not %q; refusing to touch it",
		what, meta.Namespace, meta.Name, meta.Annotations[AnnotationResourceUUID], resourceUUID)
}

func (s ClusterSpec) validate() error {
	if !clusterNameRe.MatchString(s.Name) {
		return fault.Errorf(fault.Invalid, "%q cannot name a Rancher cluster (lowercase alphanumeric or '-', starting and ending with an alphanumeric, at most 63 characters)", s.Name)
	}
	if s.ResourceUUID == "" {
		return fault.Errorf(fault.Invalid, "Rancher cluster %s: the Waldur resource UUID is required", s.Name)
	}
	if r := s.Registry; r != nil && (r.URL == "" || r.Username == "" || r.Password == "") {
		return fault.Errorf(fault.Invalid, "Rancher cluster %s: a private registry needs its URL, user and password (private_registry_url, _user, _password)", s.Name)
	}
	return nil
}

// Payloads, as structs so that the JSON's key order is the reference's
// (A.3); the values are Mastermind's.
type (
	clusterPayload struct {
		Type     string          `json:"type"`
		Metadata payloadMetadata `json:"metadata"`
		Spec     clusterSpecJSON `json:"spec"`
	}
	payloadMetadata struct {
		Name         string            `json:"name,omitempty"`
		Namespace    string            `json:"namespace"`
		GenerateName string            `json:"generateName,omitempty"`
		Labels       map[string]string `json:"labels,omitempty"`
		Annotations  map[string]string `json:"annotations,omitempty"`
	}
	clusterSpecJSON struct {
		KubernetesVersion string        `json:"kubernetesVersion"`
		RKEConfig         rkeConfigJSON `json:"rkeConfig"`
	}
	rkeConfigJSON struct {
		ChartValues           map[string]map[string]any `json:"chartValues"`
		DataDirectories       dataDirectoriesJSON       `json:"dataDirectories"`
		MachineGlobalConfig   machineGlobalConfigJSON   `json:"machineGlobalConfig"`
		MachineSelectorConfig []machineSelectorJSON     `json:"machineSelectorConfig"`
		Registries            *registriesJSON           `json:"registries,omitempty"`
	}
	dataDirectoriesJSON struct {
		SystemAgent  string `json:"systemAgent"`
		Provisioning string `json:"provisioning"`
		K8sDistro    string `json:"k8sDistro"`
	}
	machineGlobalConfigJSON struct {
		CNI               string `json:"cni"`
		DisableKubeProxy  bool   `json:"disable-kube-proxy"`
		EtcdExposeMetrics bool   `json:"etcd-expose-metrics"`
	}
	machineSelectorJSON struct {
		Config machineSelectorConfigJSON `json:"config"`
	}
	machineSelectorConfigJSON struct {
		ProtectKernelDefaults bool   `json:"protect-kernel-defaults"`
		SystemDefaultRegistry string `json:"system-default-registry,omitempty"`
	}
	registriesJSON struct {
		Configs map[string]registryConfigJSON `json:"configs"`
		Mirrors map[string]any                `json:"mirrors"`
	}
	registryConfigJSON struct {
		AuthConfigSecretName string  `json:"authConfigSecretName"`
		CABundle             *string `json:"caBundle"`
		InsecureSkipVerify   bool    `json:"insecureSkipVerify"`
		TLSSecretName        *string `json:"tlsSecretName"`
	}
	secretPayload struct {
		Type     string            `json:"type"`
		Metadata payloadMetadata   `json:"metadata"`
		Data     map[string]string `json:"data"`
	}
)

// ClusterPayload is the v1 create body for spec, Mastermind's (reference
// A.3) plus sitebus's ownership annotations; registrySecret names the
// registry auth secret when spec has a registry. Without a registry the
// machine selector config keeps protect-kernel-defaults alone and there
// is no registries block (Mastermind's test pins only the registry case).
func ClusterPayload(spec ClusterSpec, registrySecret string) any {
	version := spec.KubernetesVersion
	if version == "" {
		version = DefaultKubernetesVersion
	}
	p := clusterPayload{
		Type:     "provisioning.cattle.io.cluster",
		Metadata: payloadMetadata{Name: spec.Name, Namespace: FleetNamespace, Annotations: ownership(spec.ResourceUUID)},
		Spec: clusterSpecJSON{KubernetesVersion: version, RKEConfig: rkeConfigJSON{
			ChartValues: map[string]map[string]any{"rke2-cilium": {}},
			DataDirectories: dataDirectoriesJSON{SystemAgent: "/opt/rke2_storage/agent",
				Provisioning: "/opt/rke2_storage/provisioning", K8sDistro: "/opt/rke2_storage/rke2"},
			MachineGlobalConfig:   machineGlobalConfigJSON{CNI: "cilium"},
			MachineSelectorConfig: []machineSelectorJSON{{}},
		}},
	}
	if spec.Registry != nil {
		p.Spec.RKEConfig.MachineSelectorConfig[0].Config.SystemDefaultRegistry = spec.Registry.URL
		p.Spec.RKEConfig.Registries = &registriesJSON{
			Configs: map[string]registryConfigJSON{spec.Registry.URL: {AuthConfigSecretName: registrySecret}},
			Mirrors: map[string]any{},
		}
	}
	return p
}

// CreateProvisioningCluster makes the v1 cluster (and, with a registry,
// its auth secret first), or adopts the one of that name when it is this
// resource's (a retried create): Created tells which. A cluster of that
// name that is not this resource's is refused (backend.ErrNotManaged).
func (c *ClusterClient) CreateProvisioningCluster(ctx context.Context, spec ClusterSpec) (ProvisioningCluster, error) {
	if err := spec.validate(); err != nil {
		return ProvisioningCluster{}, err
	}
	if p, found, err := c.adopt(ctx, spec); found || err != nil {
		return p, err
	}
	secret := ""
	if spec.Registry != nil {
		var err error
		if secret, err = c.ensureRegistrySecret(ctx, spec); err != nil {
			return ProvisioningCluster{}, err
		}
	}
	var v v1Cluster
	err := c.api.do(ctx, http.MethodPost, "/v1/provisioning.cattle.io.clusters", "", ClusterPayload(spec, secret), &v)
	if errors.Is(err, ErrConflict) {
		// Made meanwhile (a concurrent retry): adopt it if it is ours.
		p, found, err := c.adopt(ctx, spec)
		if err == nil && !found {
			return p, &APIError{kind: ErrConflict, msg: "Rancher refused cluster " + spec.Name + " as a duplicate but has none; retry"}
		}
		return p, err
	}
	if err != nil {
		return ProvisioningCluster{}, err
	}
	p := v.toProvisioningCluster()
	p.Created = true
	c.log.Info("created Rancher provisioning cluster", "cluster", p.ID, "resource", spec.ResourceUUID, "registry", secret != "")
	return p, nil
}

// adopt returns the existing v1 cluster of spec's name when it is this
// resource's; found is false when there is none.
func (c *ClusterClient) adopt(ctx context.Context, spec ClusterSpec) (p ProvisioningCluster, found bool, err error) {
	v, err := c.getV1(ctx, spec.Name)
	if errors.Is(err, backend.ErrNotFound) {
		return ProvisioningCluster{}, false, nil
	}
	if err != nil {
		return ProvisioningCluster{}, false, err
	}
	if !ours(v.Metadata, spec.ResourceUUID) {
		return ProvisioningCluster{}, true, notOurs("cluster", v.Metadata, spec.ResourceUUID)
	}
	if v.Metadata.DeletionTimestamp != "" {
		return ProvisioningCluster{}, true, &APIError{kind: ErrConflict,
			msg: "Rancher cluster " + v.ID + " is being deleted; retry once it is gone"}
	}
	c.log.Info("adopted Rancher provisioning cluster made before", "cluster", v.ID, "resource", spec.ResourceUUID)
	return v.toProvisioningCluster(), true, nil
}

func (c *ClusterClient) getV1(ctx context.Context, name string) (v1Cluster, error) {
	var v v1Cluster
	err := c.api.do(ctx, http.MethodGet, c.v1ClusterPath(name), "", nil, &v)
	return v, err
}

// ownedSecretsQuery selects the secrets sitebus made for a resource.
func ownedSecretsQuery(resourceUUID string) string {
	return "labelSelector=" + url.QueryEscape(AnnotationResourceUUID+"="+resourceUUID)
}

// ownedSecrets lists the registry secrets sitebus made for the resource
// (label and annotations both checked).
func (c *ClusterClient) ownedSecrets(ctx context.Context, resourceUUID string) ([]v1Secret, error) {
	all, err := v1List[v1Secret](ctx, c.api, "/v1/secrets/"+FleetNamespace, ownedSecretsQuery(resourceUUID))
	if err != nil {
		return nil, err
	}
	var out []v1Secret
	for _, s := range all {
		if ours(s.Metadata, resourceUUID) && s.Metadata.Labels[AnnotationResourceUUID] == resourceUUID {
			out = append(out, s)
		}
	}
	return out, nil
}

// ensureRegistrySecret returns the name of the resource's registry auth
// secret, creating it (Mastermind's body plus the ownership marks) unless
// a retried create made it before.
func (c *ClusterClient) ensureRegistrySecret(ctx context.Context, spec ClusterSpec) (string, error) {
	have, err := c.ownedSecrets(ctx, spec.ResourceUUID)
	if err != nil {
		return "", err
	}
	if len(have) > 0 {
		return have[0].Metadata.Name, nil
	}
	b64 := base64.StdEncoding.EncodeToString
	var s v1Secret
	err = c.api.do(ctx, http.MethodPost, "/v1/secrets", "", secretPayload{
		Type: "kubernetes.io/basic-auth",
		Metadata: payloadMetadata{Namespace: FleetNamespace, GenerateName: registrySecretPrefix,
			Labels: map[string]string{AnnotationResourceUUID: spec.ResourceUUID}, Annotations: ownership(spec.ResourceUUID)},
		Data: map[string]string{"username": b64([]byte(spec.Registry.Username)), "password": b64([]byte(spec.Registry.Password.Reveal()))},
	}, &s)
	if err != nil {
		return "", err
	}
	if s.Metadata.Name == "" {
		return "", fmt.Errorf("Rancher API request failed: POST /v1/secrets: the answer names no secret") //nolint:staticcheck // Python's message
	}
	c.log.Info("created Rancher registry secret", "secret", FleetNamespace+"/"+s.Metadata.Name, "registry", spec.Registry.URL)
	return s.Metadata.Name, nil
}

// GetProvisioningCluster reads the v1 cluster fleet-default/name
// (backend.ErrNotFound when there is none).
func (c *ClusterClient) GetProvisioningCluster(ctx context.Context, name string) (ProvisioningCluster, error) {
	v, err := c.getV1(ctx, name)
	if err != nil {
		return ProvisioningCluster{}, err
	}
	return v.toProvisioningCluster(), nil
}

// WaitV3ClusterID polls the v1 cluster until Rancher names its v3
// cluster (status.clusterName), at most timeout; the first read is at
// once. Running out of time is retryable.
func (c *ClusterClient) WaitV3ClusterID(ctx context.Context, name string, timeout time.Duration) (string, error) {
	var id string
	done, err := c.pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		v, err := c.getV1(ctx, name)
		if err != nil {
			return false, err
		}
		id = v.Status.ClusterName
		return id != "", nil
	})
	if err != nil {
		return "", err
	}
	if !done {
		return "", fmt.Errorf("Rancher has not made the v3 cluster of %s/%s within %s; retry", c.ns, name, timeout) //nolint:staticcheck // a message for Waldur
	}
	return id, nil
}

// GetCluster reads the v3 cluster (backend.ErrNotFound when there is
// none).
func (c *ClusterClient) GetCluster(ctx context.Context, id string) (Cluster, error) {
	var v v3Cluster
	if err := c.api.do(ctx, http.MethodGet, "/v3/clusters/"+url.PathEscape(id), "", nil, &v); err != nil {
		return Cluster{}, err
	}
	return Cluster(v), nil
}

// owned resolves ref to its v1 cluster after checking that sitebus made it
// for ref.ResourceUUID: backend.ErrNotFound when there is none (and no v3
// cluster of ref.ID either), backend.ErrNotManaged when it is another's.
func (c *ClusterClient) owned(ctx context.Context, ref ClusterRef) (v1Cluster, error) {
	if ref.ResourceUUID == "" {
		return v1Cluster{}, fault.Errorf(fault.Invalid, "Rancher cluster %s: the Waldur resource UUID is required to change it", ref)
	}
	var v v1Cluster
	switch {
	case ref.Name != "":
		var err error
		if v, err = c.getV1(ctx, ref.Name); err != nil {
			return v1Cluster{}, err
		}
		if ref.ID != "" && v.Status.ClusterName != "" && v.Status.ClusterName != ref.ID {
			return v1Cluster{}, fault.Errorf(fault.NotManaged, "Rancher cluster %s/%s is v3 cluster %s, not %s; refusing to touch it",
				c.ns, ref.Name, v.Status.ClusterName, ref.ID)
		}
	case ref.ID != "":
		all, err := v1List[v1Cluster](ctx, c.api, "/v1/provisioning.cattle.io.clusters/"+c.ns, "")
		if err != nil {
			return v1Cluster{}, err
		}
		found := false
		for _, x := range all {
			if x.Status.ClusterName == ref.ID {
				v, found = x, true
				break
			}
		}
		if !found {
			if _, err := c.GetCluster(ctx, ref.ID); err != nil {
				return v1Cluster{}, err
			}
			return v1Cluster{}, fault.Errorf(fault.NotManaged, "Rancher cluster %s has no provisioning cluster in %s (not made by sitebus); refusing to touch it",
				ref.ID, c.ns)
		}
	default:
		return v1Cluster{}, fault.Errorf(fault.Invalid, "a Rancher cluster reference needs a name or an id")
	}
	if !ours(v.Metadata, ref.ResourceUUID) {
		return v1Cluster{}, notOurs("cluster", v.Metadata, ref.ResourceUUID)
	}
	return v, nil
}

// ownedV3 is owned's v3 id; a cluster Rancher has not named yet is a
// retryable error.
func (c *ClusterClient) ownedV3(ctx context.Context, ref ClusterRef) (string, error) {
	v, err := c.owned(ctx, ref)
	if err != nil {
		return "", err
	}
	if v.Status.ClusterName == "" {
		return "", fmt.Errorf("Rancher cluster %s has no v3 cluster yet; retry", ref) //nolint:staticcheck // a message for Waldur
	}
	return v.Status.ClusterName, nil
}

// RenameCluster sets the v3 cluster's name (Rancher's display name; the
// v1 object keeps its name), as Mastermind's update_cluster.
func (c *ClusterClient) RenameCluster(ctx context.Context, ref ClusterRef, name string) error {
	if name == "" {
		return fault.Errorf(fault.Invalid, "Rancher cluster %s: the new name is empty", ref)
	}
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return err
	}
	if err := c.api.do(ctx, http.MethodPut, "/v3/clusters/"+url.PathEscape(id), "", map[string]string{"name": name}, nil); err != nil {
		return err
	}
	c.log.Info("renamed Rancher cluster", "cluster", id, "name", name)
	return nil
}

// DeleteCluster deletes the cluster sitebus made for ref.ResourceUUID
// (its v1 object, which takes the v3 cluster, nodes, tokens and bindings
// with it) and the registry secrets made for it. A cluster already gone
// is done; another's is refused (backend.ErrNotManaged).
func (c *ClusterClient) DeleteCluster(ctx context.Context, ref ClusterRef) error {
	v, err := c.owned(ctx, ref)
	switch {
	case errors.Is(err, backend.ErrNotFound):
	case err != nil:
		return err
	default:
		err := c.api.do(ctx, http.MethodDelete, c.v1ClusterPath(v.Metadata.Name), "", nil, nil)
		if err != nil && !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		c.log.Info("deleted Rancher cluster", "cluster", c.ns+"/"+v.Metadata.Name, "v3", v.Status.ClusterName,
			"resource", ref.ResourceUUID)
	}
	secrets, err := c.ownedSecrets(ctx, ref.ResourceUUID)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		err := c.api.do(ctx, http.MethodDelete, "/v1/secrets/"+FleetNamespace+"/"+url.PathEscape(s.Metadata.Name), "", nil, nil)
		if err != nil && !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		c.log.Info("deleted Rancher registry secret", "secret", FleetNamespace+"/"+s.Metadata.Name)
	}
	return nil
}

// GenerateKubeconfig returns the kubeconfig Rancher generates for the
// cluster (with a bearer token: a secret).
func (c *ClusterClient) GenerateKubeconfig(ctx context.Context, ref ClusterRef) (config.Secret, error) {
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return "", err
	}
	var out struct {
		Config string `json:"config"`
	}
	if err := c.api.do(ctx, http.MethodPost, "/v3/clusters/"+url.PathEscape(id), "action=generateKubeconfig", nil, &out); err != nil {
		return "", err
	}
	if out.Config == "" {
		return "", fmt.Errorf("Rancher API request failed: POST /v3/clusters/%s?action=generateKubeconfig: no config in the answer", id) //nolint:staticcheck // Python's message
	}
	return config.Secret(out.Config), nil
}

// pollUntil calls check at once and then every poll interval until it
// reports done, fails, or timeout has passed (done false, no error). A
// cancelled ctx ends it with ctx's error.
func (c *ClusterClient) pollUntil(ctx context.Context, timeout time.Duration, check func(context.Context) (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		done, err := check(ctx)
		if err != nil || done {
			return done, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		t := time.NewTimer(min(c.poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

// v1Collection is steve's list answer.
type v1Collection[T any] struct {
	Data     []T    `json:"data"`
	Continue string `json:"continue"`
}

// v1List reads every page of a steve collection (continue tokens).
func v1List[T any](ctx context.Context, c *client, path, rawQuery string) ([]T, error) {
	var out []T
	query := rawQuery
	for page := 0; ; page++ {
		var col v1Collection[T]
		if err := c.do(ctx, http.MethodGet, path, query, nil, &col); err != nil {
			return nil, err
		}
		out = append(out, col.Data...)
		if col.Continue == "" {
			return out, nil
		}
		if page > 10000 {
			return nil, fmt.Errorf("Rancher API request failed: GET %s: more than 10000 pages", path) //nolint:staticcheck // Python's message
		}
		query = "continue=" + url.QueryEscape(col.Continue)
		if rawQuery != "" {
			query = rawQuery + "&" + query
		}
	}
}
