package rancher

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// requestTimeout bounds one Rancher call, as the Python client's 30 s.
const requestTimeout = 30 * time.Second

// maxBody bounds what is read of an answer: a cluster's project list is
// far smaller, and a runaway answer must not exhaust memory.
const maxBody = 64 << 20

// client speaks Rancher's v3 (norman) API and its /k8s/clusters proxy.
type client struct {
	base      string // backend_url without the trailing slash
	cluster   string
	accessKey string
	secretKey string
	http      *http.Client
	log       *slog.Logger
}

func newClient(s Settings, wrap func(http.RoundTripper) http.RoundTripper, log *slog.Logger) *client {
	c := newAPIClient(s.apiBase(), s.Username, s.Password.Reveal(), s.VerifyCert, wrap, log)
	c.cluster = s.ClusterID
	return c
}

// newAPIClient is a client of the Rancher at base (no trailing slash) for
// calls that name their cluster themselves.
func newAPIClient(base, accessKey, secretKey string, verify bool, wrap func(http.RoundTripper) http.RoundTripper, log *slog.Logger) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify} //nolint:gosec // verify_cert: false is the operator's explicit choice
	var rt http.RoundTripper = tr
	if wrap != nil {
		rt = wrap(rt)
	}
	return &client{
		base: base, accessKey: accessKey, secretKey: secretKey,
		http: &http.Client{Transport: rt, Timeout: requestTimeout}, log: log,
	}
}

// do sends method to path (already escaped) with the raw query as given:
// Rancher's filters are sent unencoded, as the Python agent joins them
// (groupPrincipalId=keycloakoidc_group://...), which url.Values would
// encode. A 2xx answer is decoded into out (unless nil or empty).
func (c *client) do(ctx context.Context, method, path, rawQuery string, in, out any) error {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return fmt.Errorf("rancher: bad request path %q: %w", path, err)
	}
	u.RawQuery = rawQuery
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("rancher: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("rancher: %s %s: %w", method, path, err)
	}
	req.URL.RawQuery = rawQuery // as sent, whatever url.Parse made of it
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.accessKey != "" || c.secretKey != "" {
		req.SetBasicAuth(c.accessKey, c.secretKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(method, path, c.redactErr(err))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := httpbody.ReadAll(resp.Body, maxBody)
	if err != nil {
		return transportError(method, path, c.redactErr(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Redacted before errorBody shortens it, so that no part of the
		// secret survives a cut, and in every field Rancher may echo it.
		code, msg := errorBody([]byte(c.redact(string(data))))
		e := statusError(method, path, c.accessKey, resp.StatusCode, code, msg)
		c.log.Debug("rancher call failed", "method", method, "path", path, "status", resp.StatusCode, "code", code)
		return e
	}
	if normanError(data) {
		// Rancher's error object as a 2xx is a proxy's or a broken
		// Rancher's; decoded, it would pass for an empty object.
		// Retryable, as a 5xx with the same body would be.
		code, msg := errorBody([]byte(c.redact(string(data))))
		return fault.Errorf(fault.Unavailable, "Rancher API request failed: %s %s: HTTP %d answer is an error object (%s: %s), not a result", //nolint:staticcheck // names the platform
			method, path, resp.StatusCode, code, msg)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		// Retryable (fault.Unavailable), not terminal: an unreadable 2xx
		// is a proxy's login or maintenance page far more often than a
		// lasting fault, and the bounded redeliveries end it if it lasts.
		// The Content-Type says which it was, without quoting the body.
		return fault.Mark(fmt.Errorf("Rancher API request failed: %s %s: unreadable answer (Content-Type %q): %w", //nolint:staticcheck // Python's message
			method, path, resp.Header.Get("Content-Type"), err), fault.Unavailable)
	}
	return nil
}

// normanError reports whether data is Rancher's (norman's) error object,
// {"type": "error", ...}, which no resource is.
func normanError(data []byte) bool {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return false
	}
	var e struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(data, &e) == nil && e.Type == "error"
}

// errorBody reads Rancher's error body; status may be a number or, in
// the 401 body, a string, so it is not decoded. Anything else is quoted
// (shortened) as the message.
func errorBody(data []byte) (code, message string) {
	// code is a string in norman's bodies and a number in the Kubernetes
	// Status the cluster proxy passes on (then reason is the word).
	var e struct {
		Code    any    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil {
		code, _ = e.Code.(string)
		if code == "" {
			code = e.Reason
		}
		if code != "" || e.Message != "" {
			return code, e.Message
		}
	}
	return "", httpbody.Shorten(strings.TrimSpace(string(data)), 512)
}

// redact removes the secret key, and the basic credentials made of it,
// from text a server or transport sent back: an error body or a proxy's
// message may echo the request.
func (c *client) redact(s string) string {
	if c.secretKey == "" {
		return s
	}
	basic := base64.StdEncoding.EncodeToString([]byte(c.accessKey + ":" + c.secretKey))
	return strings.NewReplacer(basic, "[redacted]", c.secretKey, "[redacted]").Replace(s)
}

func (c *client) redactErr(err error) error {
	if s := err.Error(); c.redact(s) != s {
		return redactedError{msg: c.redact(s), err: err}
	}
	return err
}

// redactedError keeps the cause for errors.As while printing without the
// secret.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// collection is a norman list answer.
type collection[T any] struct {
	Data       []T `json:"data"`
	Pagination *struct {
		Next string `json:"next"`
	} `json:"pagination"`
}

// list reads every page of a collection. A next link off Rancher's base
// URL is not followed (the credentials go only to the configured server).
func list[T any](ctx context.Context, c *client, path, rawQuery string) ([]T, error) {
	var out []T
	for page := 0; ; page++ {
		var col collection[T]
		if err := c.do(ctx, http.MethodGet, path, rawQuery, nil, &col); err != nil {
			return nil, err
		}
		out = append(out, col.Data...)
		if col.Pagination == nil || col.Pagination.Next == "" {
			return out, nil
		}
		next, ok := strings.CutPrefix(col.Pagination.Next, c.base)
		if !ok || page > 10000 {
			return nil, fmt.Errorf("Rancher API request failed: GET %s: next page %q is not on %s", path, col.Pagination.Next, c.base) //nolint:staticcheck // Python's message
		}
		path, rawQuery, _ = strings.Cut(next, "?")
	}
}

// Rancher objects, with the fields sitebus reads.
type (
	project struct {
		ID            string            `json:"id"`
		Name          string            `json:"name"`
		ClusterID     string            `json:"clusterId"`
		Description   string            `json:"description"`
		State         string            `json:"state"`
		Annotations   map[string]string `json:"annotations"`
		ResourceQuota *struct {
			Limit map[string]any `json:"limit"`
		} `json:"resourceQuota"`
	}
	namespace struct {
		ID          string            `json:"id"`
		Name        string            `json:"name"`
		ProjectID   string            `json:"projectId"`
		State       string            `json:"state"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	binding struct {
		ID               string `json:"id"`
		RoleTemplateID   string `json:"roleTemplateId"`
		ProjectID        string `json:"projectId"`
		GroupPrincipalID string `json:"groupPrincipalId"`
		UserID           string `json:"userId"`
	}
	resourceQuota struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Hard map[string]string `json:"hard"`
		} `json:"spec"`
	}
)

func (c *client) getCluster(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	err := c.do(ctx, http.MethodGet, "/v3/clusters/"+url.PathEscape(c.cluster), "", nil, &out)
	return out, err
}

func (c *client) listProjects(ctx context.Context) ([]project, error) {
	return list[project](ctx, c, "/v3/projects", "clusterId="+c.cluster)
}

func (c *client) getProject(ctx context.Context, id string) (project, error) {
	var p project
	err := c.do(ctx, http.MethodGet, "/v3/projects/"+url.PathEscape(id), "", nil, &p)
	return p, err
}

func (c *client) createProject(ctx context.Context, name, description string, annotations map[string]string) (project, error) {
	var p project
	err := c.do(ctx, http.MethodPost, "/v3/projects", "", map[string]any{
		"type": "project", "clusterId": c.cluster, "name": name, "description": description, "annotations": annotations,
	}, &p)
	return p, err
}

// setProjectAnnotations replaces the project's annotations: norman's PUT
// replaces a map field it is given, so removing one is leaving it out.
func (c *client) setProjectAnnotations(ctx context.Context, id string, annotations map[string]string) error {
	return c.do(ctx, http.MethodPut, "/v3/projects/"+url.PathEscape(id), "", map[string]any{"annotations": annotations}, nil)
}

func (c *client) deleteProject(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v3/projects/"+url.PathEscape(id), "", nil, nil)
}

func (c *client) namespacesPath() string {
	return "/v3/clusters/" + url.PathEscape(c.cluster) + "/namespaces"
}

func (c *client) getNamespace(ctx context.Context, name string) (namespace, error) {
	var ns namespace
	err := c.do(ctx, http.MethodGet, c.namespacesPath()+"/"+url.PathEscape(name), "", nil, &ns)
	return ns, err
}

// namespaceLabels are the labels createNamespace writes: Python's
// restricted pod security, then namespace_labels.
func namespaceLabels(extraLabels map[string]string) map[string]string {
	labels := map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}
	maps.Copy(labels, extraLabels)
	return labels
}

// namespaceAnnotations are the annotations createNamespace writes.
func namespaceAnnotations() map[string]string {
	return map[string]string{AnnotationManaged: "true"}
}

// createNamespace makes a namespace in the project with Python's labels
// and annotation.
func (c *client) createNamespace(ctx context.Context, projectID, name string, extraLabels map[string]string) (namespace, error) {
	var ns namespace
	err := c.do(ctx, http.MethodPost, c.namespacesPath(), "", map[string]any{
		"type": "namespace", "name": name, "projectId": projectID, "labels": namespaceLabels(extraLabels),
		"annotations": namespaceAnnotations(),
	}, &ns)
	return ns, err
}

// allNamespaces lists every namespace of the cluster, in one listing.
func (c *client) allNamespaces(ctx context.Context) ([]namespace, error) {
	return list[namespace](ctx, c, c.namespacesPath(), "")
}

// setNamespaceMarks replaces the namespace's labels and annotations with
// norman's PUT, which replaces a map field it is given (as the project's
// PUT does); Rancher keeps its own project link on the namespace.
func (c *client) setNamespaceMarks(ctx context.Context, name string, labels, annotations map[string]string) error {
	return c.do(ctx, http.MethodPut, c.namespacesPath()+"/"+url.PathEscape(name), "",
		map[string]any{"labels": labels, "annotations": annotations}, nil)
}

func (c *client) listNamespaces(ctx context.Context, projectID string) ([]namespace, error) {
	return list[namespace](ctx, c, c.namespacesPath(), "projectId="+projectID)
}

// importYAML applies a manifest in namespace ns, as kubectl apply does.
func (c *client) importYAML(ctx context.Context, ns, manifest string) error {
	return c.do(ctx, http.MethodPost, "/v3/clusters/"+url.PathEscape(c.cluster), "action=importYaml",
		map[string]string{"yaml": manifest, "namespace": ns}, nil)
}

// quotas lists a namespace's ResourceQuotas through Rancher's proxy to the
// cluster's API server.
func (c *client) quotas(ctx context.Context, ns string) ([]resourceQuota, error) {
	var out struct {
		Items []resourceQuota `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, "/k8s/clusters/"+url.PathEscape(c.cluster)+"/api/v1/namespaces/"+url.PathEscape(ns)+"/resourcequotas", "", nil, &out)
	return out.Items, err
}

// findBindings looks a group's bindings with role up, on projectID or,
// when it is empty, on any project, with Python's unencoded filter query.
// The answer is filtered again here: a server that ignores a filter must
// not make another group's binding look like this one.
func (c *client) findBindings(ctx context.Context, role, projectID, principal string) ([]binding, error) {
	query := "roleTemplateId=" + role + "&groupPrincipalId=" + principal
	if projectID != "" {
		query = "roleTemplateId=" + role + "&projectId=" + projectID + "&groupPrincipalId=" + principal
	}
	all, err := list[binding](ctx, c, "/v3/projectroletemplatebindings", query)
	if err != nil {
		return nil, err
	}
	var out []binding
	for _, b := range all {
		if b.RoleTemplateID == role && (projectID == "" || b.ProjectID == projectID) && b.GroupPrincipalID == principal {
			out = append(out, b)
		}
	}
	return out, nil
}

func (c *client) createBinding(ctx context.Context, role, projectID, principal string) (binding, error) {
	var b binding
	err := c.do(ctx, http.MethodPost, "/v3/projectroletemplatebindings", "", map[string]string{
		"type": "projectRoleTemplateBinding", "roleTemplateId": role, "projectId": projectID, "groupPrincipalId": principal,
	}, &b)
	return b, err
}

func (c *client) deleteBinding(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/v3/projectroletemplatebindings/"+url.PathEscape(id), "", nil, nil)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	return err
}

func (c *client) projectBindings(ctx context.Context, projectID string) ([]binding, error) {
	return list[binding](ctx, c, "/v3/projects/"+url.PathEscape(projectID)+"/projectroletemplatebindings", "")
}
