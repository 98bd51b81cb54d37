package vault

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// requestTimeout bounds one Vault call.
const requestTimeout = 30 * time.Second

// Role limits, as Mastermind sets them: a secret-id logs in once within an
// hour, and the token it gives reads the secret once.
const (
	SecretIDTTL     = "60m"
	SecretIDNumUses = 1
	TokenNumUses    = 1
	TokenTTL        = "60m"
	TokenMaxTTL     = "60m"
)

// Client manages a cluster's Vault objects with the configured token.
type Client struct {
	api  *vaultapi.Client
	addr string
}

// New builds a client for s (which must be Enabled and valid). Nothing in
// the environment (VAULT_ADDR, VAULT_TOKEN, VAULT_SKIP_VERIFY, ...)
// changes where it connects, how it verifies or who it is.
func New(s Settings) (*Client, error) {
	addr, err := s.Address()
	if err != nil {
		return nil, fmt.Errorf("vault: vault_host: %w", err)
	}
	c, err := newAPI(addr, tlsConfig(s))
	if err != nil {
		return nil, err
	}
	c.SetToken(s.Token.Reveal())
	return &Client{api: c, addr: addr}, nil
}

func newAPI(addr string, t vaultapi.TLSConfig) (*vaultapi.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	cfg := &vaultapi.Config{
		Address:    addr,
		HttpClient: &http.Client{Transport: tr, Timeout: requestTimeout},
		Timeout:    requestTimeout,
		// The bus retries with backoff; a retry inside a step would only
		// hide how long Vault has been failing.
		MaxRetries: 0,
	}
	if err := cfg.ConfigureTLS(&t); err != nil {
		return nil, fmt.Errorf("vault: TLS settings (vault_ca_file): %w", err)
	}
	// After ConfigureTLS, which needs the bare *http.Transport: Vault's api
	// reads an answer whole without a cap, and takes a 200 holding Vault's
	// {"errors": [...]} (a performance standby's or a proxy's) for an empty
	// secret, which RoleID would report as a role that does not exist.
	cfg.HttpClient.Transport = &httpbody.Guard{Next: tr, Peer: "Vault", MediaTypes: []string{"application/json"},
		ErrorObject: isErrorObject}
	c, err := vaultapi.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	c.ClearToken()
	c.ClearNamespace()
	return c, nil
}

// CloseIdleConnections closes the kept-alive connections to Vault, for a
// caller that stops using the client (and for tests that count them).
func (c *Client) CloseIdleConnections() {
	if hc := c.api.CloneConfig().HttpClient; hc != nil {
		hc.CloseIdleConnections()
	}
}

// Address is Vault's base URL, what nodes are given as VAULT_ADDR.
func (c *Client) Address() string { return c.addr }

// EnableAppRole enables the approle auth method at approle/ unless it is
// already enabled there.
func (c *Client) EnableAppRole(ctx context.Context) error {
	mounts, err := c.api.Sys().ListAuthWithContext(ctx)
	if err != nil {
		return classify("list auth methods", "sys/auth", err)
	}
	if m, ok := mounts["approle/"]; ok {
		if m.Type != "approle" {
			return fault.Errorf(fault.Invalid, "vault: auth path approle/ holds a %q method, not approle", m.Type)
		}
		return nil
	}
	err = c.api.Sys().EnableAuthWithOptionsWithContext(ctx, "approle", &vaultapi.EnableAuthOptions{Type: "approle"})
	if err == nil {
		return nil
	}
	// Another caller enabled it meanwhile: Vault says 400 "path is already
	// in use"; look again rather than matching its text.
	if again, lerr := c.api.Sys().ListAuthWithContext(ctx); lerr == nil {
		if m, ok := again["approle/"]; ok && m.Type == "approle" {
			return nil
		}
	}
	return classify("enable approle", "sys/auth/approle", err)
}

// Ensure makes approle enabled and the cluster's policy, AppRole and KV
// secret (holding registrationToken) exist as they should; repeating it
// changes nothing. Calls: GET sys/auth, PUT the policy, POST the role, GET
// the secret, and POST it only when it differs.
func (c *Client) Ensure(ctx context.Context, cl Cluster, registrationToken string) error {
	if registrationToken == "" {
		return fault.Errorf(fault.Invalid, "vault: no registration token to store for cluster %s", cl.UUID())
	}
	if err := c.EnableAppRole(ctx); err != nil {
		return err
	}
	if err := c.EnsurePolicy(ctx, cl); err != nil {
		return err
	}
	if err := c.EnsureRole(ctx, cl); err != nil {
		return err
	}
	return c.EnsureToken(ctx, cl, registrationToken)
}

// EnsurePolicy writes the cluster's policy (a write replaces it whole, so
// repeating it is harmless).
func (c *Client) EnsurePolicy(ctx context.Context, cl Cluster) error {
	name := cl.PolicyName()
	return classify("put policy", "sys/policies/acl/"+name, c.api.Sys().PutPolicyWithContext(ctx, name, cl.Policy()))
}

// EnsureRole writes the cluster's AppRole (create or update with the same
// fields: repeating it is harmless and keeps the role-id).
func (c *Client) EnsureRole(ctx context.Context, cl Cluster) error {
	_, err := c.api.Logical().WriteWithContext(ctx, cl.rolePath(), map[string]any{
		"token_policies":     []string{cl.PolicyName()},
		"secret_id_ttl":      SecretIDTTL,
		"secret_id_num_uses": SecretIDNumUses,
		"token_num_uses":     TokenNumUses,
		"token_ttl":          TokenTTL,
		"token_max_ttl":      TokenMaxTTL,
	})
	return classify("write approle role", cl.rolePath(), err)
}

// EnsureToken stores {"token": registrationToken} as the cluster's KV v2
// secret, writing a version only when the current one differs.
func (c *Client) EnsureToken(ctx context.Context, cl Cluster, registrationToken string) error {
	kv := c.api.KVv2(KVMount)
	path := KVMount + "/data/" + cl.SecretPath()
	cur, err := kv.Get(ctx, cl.SecretPath())
	switch {
	case err == nil:
		if t, ok := cur.Data["token"].(string); ok && t == registrationToken {
			return nil
		}
	case errors.Is(err, vaultapi.ErrSecretNotFound):
	default:
		return c.kvError("read secret", path, err)
	}
	_, err = kv.Put(ctx, cl.SecretPath(), map[string]any{"token": registrationToken})
	return c.kvError("write secret", path, err)
}

// kvError adds what a 404 on the KV paths means: no KV v2 engine at
// KVMount, which no retry fixes.
func (c *Client) kvError(op, path string, err error) error {
	err = classify(op, path, err)
	if errors.Is(err, fault.NotFound) {
		return fault.Errorf(fault.Invalid, "%v (is a KV v2 engine mounted at %s/? vault secrets enable -path=%s kv-v2)", err, KVMount, KVMount)
	}
	return err
}

// RoleID is the cluster's AppRole role-id. A missing role is
// fault.NotFound: call Ensure first.
func (c *Client) RoleID(ctx context.Context, cl Cluster) (string, error) {
	path := cl.rolePath() + "/role-id"
	s, err := c.api.Logical().ReadWithContext(ctx, path)
	if err != nil {
		err = classify("read role-id", path, err)
		if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusBadRequest && roleMissing(e.Errors) {
			e.kind = fault.NotFound
		}
		return "", err
	}
	if s == nil {
		return "", &Error{Op: "read role-id", Path: path, Status: http.StatusNotFound, kind: fault.NotFound,
			Errors: []string{"role " + cl.RoleName() + " does not exist"}}
	}
	id, _ := s.Data["role_id"].(string)
	if id == "" {
		return "", fmt.Errorf("vault: read role-id (%s): answer without role_id", path)
	}
	return id, nil
}

// NewSecretID issues a secret-id for one node (each call a new one, good
// for one login within SecretIDTTL); node goes into its metadata, which
// Vault's audit log shows. A missing role is fault.NotFound.
func (c *Client) NewSecretID(ctx context.Context, cl Cluster, node string) (string, error) {
	path := cl.rolePath() + "/secret-id"
	body := map[string]any{}
	if node != "" {
		body["metadata"] = fmt.Sprintf(`{"node":%q}`, node)
	}
	s, err := c.api.Logical().WriteWithContext(ctx, path, body)
	if err != nil {
		err = classify("issue secret-id", path, err)
		if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusBadRequest && roleMissing(e.Errors) {
			e.kind = fault.NotFound
		}
		return "", err
	}
	if s == nil {
		return "", fmt.Errorf("vault: issue secret-id (%s): empty answer", path)
	}
	id, _ := s.Data["secret_id"].(string)
	if id == "" {
		return "", fmt.Errorf("vault: issue secret-id (%s): answer without secret_id", path)
	}
	return id, nil
}

// roleMissing tells Vault's 400 for an AppRole that does not exist.
func roleMissing(errs []string) bool {
	for _, e := range errs {
		if containsFold(e, "role") && (containsFold(e, "not exist") || containsFold(e, "not found")) {
			return true
		}
	}
	return false
}

// Cleanup deletes the cluster's policy, AppRole (with every secret-id
// issued) and KV secret (every version and its metadata). What is gone
// already is success; every deletion is tried even when one fails.
func (c *Client) Cleanup(ctx context.Context, cl Cluster) error {
	var errs []error
	if err := c.api.Sys().DeletePolicyWithContext(ctx, cl.PolicyName()); err != nil {
		errs = append(errs, gone(classify("delete policy", "sys/policies/acl/"+cl.PolicyName(), err)))
	}
	if _, err := c.api.Logical().DeleteWithContext(ctx, cl.rolePath()); err != nil {
		errs = append(errs, gone(classify("delete approle role", cl.rolePath(), err)))
	}
	if err := c.api.KVv2(KVMount).DeleteMetadata(ctx, cl.SecretPath()); err != nil {
		errs = append(errs, gone(classify("delete secret", KVMount+"/metadata/"+cl.SecretPath(), err)))
	}
	return errors.Join(errs...)
}

// gone drops a not-found: deleting what is gone is success.
func gone(err error) error {
	if errors.Is(err, fault.NotFound) {
		return nil
	}
	return err
}

// Exists reports which of the cluster's three objects exist: for tests,
// diagnostics and a terminate that wants to know what is left.
func (c *Client) Exists(ctx context.Context, cl Cluster) (policy, role, secret bool, err error) {
	p, err := c.api.Sys().GetPolicyWithContext(ctx, cl.PolicyName())
	if err != nil {
		return false, false, false, classify("read policy", "sys/policies/acl/"+cl.PolicyName(), err)
	}
	r, err := c.api.Logical().ReadWithContext(ctx, cl.rolePath())
	if err != nil {
		return false, false, false, classify("read approle role", cl.rolePath(), err)
	}
	m, err := c.api.Logical().ReadWithContext(ctx, KVMount+"/metadata/"+cl.SecretPath())
	if err != nil {
		return false, false, false, c.kvError("read secret metadata", KVMount+"/metadata/"+cl.SecretPath(), err)
	}
	return p != "", r != nil, m != nil, nil
}

// isErrorObject tells Vault's error answer, {"errors": [...]} with at least
// one error, from a result: results never carry a top-level errors list.
func isErrorObject(body []byte) bool {
	var e struct {
		Errors []json.RawMessage `json:"errors"`
	}
	return json.Unmarshal(body, &e) == nil && len(e.Errors) > 0
}
