package vault

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Node is what a booting node does with its cloud-init's role-id and
// secret-id, as rke-install.sh does with the Vault CLI: log in once, then
// read the registration token. The simulators and tests use it to prove a
// node's user_data works against a real Vault.
type Node struct {
	c *Client
}

// NodeLogin logs in at addr with an AppRole role-id and secret-id. A used,
// expired or foreign secret-id is Vault's 400, fault.Invalid.
// tlsVerify false is the template's -tls-skip-verify.
func NodeLogin(ctx context.Context, addr string, tlsVerify bool, caFile, roleID, secretID string) (*Node, error) {
	// VAULT_ADDR as the CLI takes it: a URL whose port defaults to the
	// scheme's, not Vault's 8200.
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fault.Errorf(fault.Invalid, "vault: node login: VAULT_ADDR %q is not an http(s) URL", addr)
	}
	a := u.Scheme + "://" + u.Host
	api, err := newAPI(a, tlsConfig(Settings{TLSVerify: tlsVerify, CAFile: caFile}))
	if err != nil {
		return nil, err
	}
	const path = "auth/approle/login"
	sec, err := api.Logical().WriteWithContext(ctx, path, map[string]any{"role_id": roleID, "secret_id": secretID})
	if err != nil {
		return nil, classify("approle login", path, err)
	}
	if sec == nil || sec.Auth == nil || sec.Auth.ClientToken == "" {
		return nil, fmt.Errorf("vault: approle login (%s): answer without a client token", path)
	}
	api.SetToken(sec.Auth.ClientToken)
	return &Node{c: &Client{api: api, addr: a}}, nil
}

// ReadToken reads the "token" field of the KV v2 secret at cliPath, given
// as `vault kv get` takes it: <mount>/<path> (secret/rancher/cluster-<uuid>).
// Without the policy for it Vault answers 403 (PermissionDenied).
func (n *Node) ReadToken(ctx context.Context, cliPath string) (string, error) {
	mount, path, ok := strings.Cut(strings.Trim(cliPath, "/"), "/")
	if !ok || mount == "" || path == "" {
		return "", fault.Errorf(fault.Invalid, "vault: %q is not a KV path <mount>/<path>", cliPath)
	}
	s, err := n.c.api.KVv2(mount).Get(ctx, path)
	if errors.Is(err, vaultapi.ErrSecretNotFound) {
		return "", &Error{Op: "read secret", Path: mount + "/data/" + path, Status: 404, kind: fault.NotFound,
			Errors: []string{"no secret at " + cliPath}}
	}
	if err != nil {
		return "", n.c.kvError("read secret", mount+"/data/"+path, err)
	}
	t, _ := s.Data["token"].(string)
	if t == "" {
		return "", fault.Errorf(fault.Invalid, "vault: secret %s has no token field", cliPath)
	}
	return t, nil
}

func tlsConfig(s Settings) vaultapi.TLSConfig {
	return vaultapi.TLSConfig{CACert: s.CAFile, Insecure: !s.TLSVerify}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
