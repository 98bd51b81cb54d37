package provisioner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
)

// ArgoCD registers a cluster with ArgoCD: a Secret labelled
// argocd.argoproj.io/secret-type: cluster in ArgoCD's namespace (reference
// A.7). Ensure adopts the resource's own Secret and refuses another's of
// the same name; Delete removes only the resource's.
type ArgoCD interface {
	EnsureClusterSecret(ctx context.Context, s ClusterSecret) (created bool, err error)
	DeleteClusterSecret(ctx context.Context, namespace, name, resourceUUID string) error
}

// ClusterSecret is an ArgoCD cluster Secret.
type ClusterSecret struct {
	Namespace, Name, ResourceUUID string
	Labels                        map[string]string
	// StringData: name, server and config ({"bearerToken": ...}).
	StringData map[string]string
}

// Labels and the annotation of the cluster Secret.
const (
	argoSecretTypeLabel = "argocd.argoproj.io/secret-type"
	longhornLabel       = "k8s.waldur.com/longhorn-enabled"
	ownerAnnotation     = "sitebus.waldur.com/resource"
)

// kubeconfig is the part of a kubeconfig sitebus reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string `yaml:"token"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKeyData         string `yaml:"client-key-data"`
		} `yaml:"user"`
	} `yaml:"users"`
}

func parseKubeconfig(text string) (kubeconfig, error) {
	var k kubeconfig
	if err := yaml.Unmarshal([]byte(text), &k); err != nil {
		return k, fault.Errorf(fault.Invalid, "kubeconfig: %v", err)
	}
	if len(k.Clusters) == 0 || len(k.Users) == 0 {
		return k, fault.Errorf(fault.Invalid, "kubeconfig: no cluster or no user")
	}
	return k, nil
}

// current returns the current context's cluster and user (the first
// ones without a current context).
func (k kubeconfig) current() (ci, ui int) {
	cluster, user := k.Clusters[0].Name, k.Users[0].Name
	for _, c := range k.Contexts {
		if c.Name == k.CurrentContext {
			cluster, user = c.Context.Cluster, c.Context.User
		}
	}
	for i, c := range k.Clusters {
		if c.Name == cluster {
			ci = i
		}
	}
	for i, u := range k.Users {
		if u.Name == user {
			ui = i
		}
	}
	return ci, ui
}

// clusterSecretData is what ArgoCD needs of a Rancher kubeconfig, as
// Mastermind takes it: clusters[0]'s name and server, users[0]'s token.
func clusterSecretData(kc string) (map[string]string, error) {
	k, err := parseKubeconfig(kc)
	if err != nil {
		return nil, err
	}
	if k.Users[0].User.Token == "" {
		return nil, fault.Errorf(fault.Invalid, "the cluster's kubeconfig has no bearer token")
	}
	cfg, err := json.Marshal(map[string]string{"bearerToken": k.Users[0].User.Token})
	if err != nil {
		return nil, err
	}
	return map[string]string{"name": k.Clusters[0].Name, "server": k.Clusters[0].Cluster.Server, "config": string(cfg)}, nil
}

// kubeSecrets is ArgoCD on the Kubernetes API of the cluster ArgoCD runs
// in, reached with a kubeconfig (bearer token or client certificate).
type kubeSecrets struct {
	server string
	token  string
	client *http.Client
}

// NewArgoCD reaches the ArgoCD cluster with kubeconfig (its content).
func NewArgoCD(kubeconfigText string) (ArgoCD, error) {
	k, err := parseKubeconfig(kubeconfigText)
	if err != nil {
		return nil, fmt.Errorf("argocd_k8s_kubeconfig: %w", err)
	}
	ci, ui := k.current()
	c, u := k.Clusters[ci].Cluster, k.Users[ui].User
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipTLSVerify} //nolint:gosec // the kubeconfig's own choice
	if c.CertificateAuthorityData != "" {
		pem, err := base64.StdEncoding.DecodeString(c.CertificateAuthorityData)
		if err != nil {
			return nil, fault.Errorf(fault.Invalid, "argocd_k8s_kubeconfig: certificate-authority-data: %v", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fault.Errorf(fault.Invalid, "argocd_k8s_kubeconfig: certificate-authority-data holds no PEM certificate")
		}
	}
	if u.ClientCertificateData != "" {
		cert, err1 := base64.StdEncoding.DecodeString(u.ClientCertificateData)
		key, err2 := base64.StdEncoding.DecodeString(u.ClientKeyData)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fault.Errorf(fault.Invalid, "argocd_k8s_kubeconfig: client certificate: %v", err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fault.Errorf(fault.Invalid, "argocd_k8s_kubeconfig: client certificate: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if _, err := url.Parse(c.Server); err != nil || c.Server == "" {
		return nil, fault.Errorf(fault.Invalid, "argocd_k8s_kubeconfig: server %q is not a URL", c.Server)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &kubeSecrets{server: strings.TrimRight(c.Server, "/"), token: u.Token, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

type secretJSON struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
}

func (k *kubeSecrets) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("argocd cluster: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return resp.StatusCode, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnprocessableEntity:
		return resp.StatusCode, fault.Errorf(fault.Invalid, "argocd cluster: %s %s: %s", method, path, resp.Status)
	case resp.StatusCode >= 300:
		return resp.StatusCode, fmt.Errorf("argocd cluster: %s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("argocd cluster: %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func secretPath(namespace, name string) string {
	p := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/secrets"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

func (k *kubeSecrets) get(ctx context.Context, namespace, name string) (*secretJSON, error) {
	var s secretJSON
	code, err := k.do(ctx, http.MethodGet, secretPath(namespace, name), nil, &s)
	if err != nil || code == http.StatusNotFound {
		return nil, err
	}
	return &s, nil
}

func (k *kubeSecrets) EnsureClusterSecret(ctx context.Context, cs ClusterSecret) (bool, error) {
	got, err := k.get(ctx, cs.Namespace, cs.Name)
	if err != nil {
		return false, err
	}
	if got != nil {
		if got.Metadata.Annotations[ownerAnnotation] != cs.ResourceUUID {
			return false, fault.Errorf(fault.NotManaged, "ArgoCD Secret %s/%s is not this cluster's (annotation %s)", cs.Namespace, cs.Name, ownerAnnotation)
		}
		return false, nil
	}
	var s secretJSON
	s.APIVersion, s.Kind, s.Type = "v1", "Secret", "Opaque"
	s.Metadata.Name, s.Metadata.Namespace, s.Metadata.Labels = cs.Name, cs.Namespace, cs.Labels
	s.Metadata.Annotations = map[string]string{ownerAnnotation: cs.ResourceUUID}
	s.StringData = cs.StringData
	code, err := k.do(ctx, http.MethodPost, secretPath(cs.Namespace, ""), s, nil)
	if code == http.StatusConflict {
		return false, fmt.Errorf("argocd Secret %s/%s appeared meanwhile; retrying", cs.Namespace, cs.Name)
	}
	return err == nil, err
}

func (k *kubeSecrets) DeleteClusterSecret(ctx context.Context, namespace, name, resourceUUID string) error {
	got, err := k.get(ctx, namespace, name)
	if err != nil || got == nil {
		return err
	}
	if got.Metadata.Annotations[ownerAnnotation] != resourceUUID {
		return fault.Errorf(fault.NotManaged, "ArgoCD Secret %s/%s is not this cluster's; left alone", namespace, name)
	}
	_, err = k.do(ctx, http.MethodDelete, secretPath(namespace, name), nil, nil)
	return err
}

// argocd registers the cluster with ArgoCD when the offering has one:
// the cluster's kubeconfig from Rancher, its name, server and token in
// the cluster Secret, labelled for Longhorn when the order asked for it.
//
// A failure never undoes the cluster, which is finished and usable by now
// (Mastermind only logs it): a retryable error is retried as any step's,
// and the last attempt's error, or a terminal one, is logged, counted
// (sitebus_cluster_argocd_failures_total) and recorded as the step's
// output (argoCDOutcome), which settle reports to Waldur in the
// resource's backend metadata (argocd_error); the saga goes on.
func (a *activities) argocd(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan.ArgoCDSecret == "" || r.o.ArgoCD == nil {
		return nil, err
	}
	err = r.registerArgoCD(ctx)
	switch {
	case err == nil:
		return nil, nil
	case !bus.IsTerminal(err) && !fault.IsTerminal(err) && in.Attempt < stepAttempts:
		return nil, err
	case errors.Is(ctx.Err(), context.Canceled):
		// This coordinator is stopping: the attempt runs again elsewhere.
		return nil, err
	}
	if a.argocdFailures != nil {
		a.argocdFailures.Inc()
	}
	r.log.Error("registering the cluster with ArgoCD failed; the cluster stays, and Waldur's backend metadata says so (argocd_error)",
		"secret", r.o.Settings.ArgoCDNamespace+"/"+r.plan.ArgoCDSecret, "attempts", in.Attempt, "err", err)
	return json.Marshal(argoCDOutcome{Error: err.Error()})
}

// argoCDOutcome is the argocd step's output when the registration failed
// for good.
type argoCDOutcome struct {
	Error string `json:"error,omitempty"`
}

// argoCDError is the error the argocd step recorded ("" when it
// registered the cluster, or had nothing to do).
func argoCDError(outputs map[string]json.RawMessage) string {
	var o argoCDOutcome
	if raw := outputs["argocd"]; len(raw) > 0 && json.Unmarshal(raw, &o) == nil {
		return o.Error
	}
	return ""
}

// registerArgoCD writes the cluster Secret.
func (r *run) registerArgoCD(ctx context.Context) error {
	kc, err := r.o.Rancher.GenerateKubeconfig(ctx, r.clusterRef())
	if err != nil {
		return fmt.Errorf("kubeconfig of %s: %w", r.clusterRef(), err)
	}
	data, err := clusterSecretData(kc.Reveal())
	if err != nil {
		return err
	}
	labels := map[string]string{argoSecretTypeLabel: "cluster"}
	if r.plan.InstallLonghorn {
		labels[longhornLabel] = "true"
	}
	created, err := r.o.ArgoCD.EnsureClusterSecret(ctx, ClusterSecret{Namespace: r.o.Settings.ArgoCDNamespace, Name: r.plan.ArgoCDSecret,
		ResourceUUID: r.in.ResourceUUID, Labels: labels, StringData: data})
	if err != nil {
		return fmt.Errorf("argocd Secret %s: %w", r.plan.ArgoCDSecret, err)
	}
	r.log.Info("cluster registered with ArgoCD", "secret", r.o.Settings.ArgoCDNamespace+"/"+r.plan.ArgoCDSecret, "created", created)
	return nil
}

func (a *activities) deleteArgoCD(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil || r.plan.ArgoCDSecret == "" || r.o.ArgoCD == nil {
		return nil, err
	}
	return nil, r.o.ArgoCD.DeleteClusterSecret(ctx, r.o.Settings.ArgoCDNamespace, r.plan.ArgoCDSecret, r.in.ResourceUUID)
}
