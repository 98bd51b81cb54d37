package kube

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// UserName is the unprivileged user behind Cluster.UserToken: it belongs
// to no group but system:authenticated, so RBAC denies it everything until
// a test binds a role to it.
const UserName = "sitebus-test-user"

// AdminName is the user behind Cluster.Token, a member of system:masters.
const AdminName = "admin"

// writeServiceAccountKeys generates the RSA key pair the API server signs
// service-account tokens with (and the controller manager mints them with).
func writeServiceAccountKeys(keyFile, pubFile string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service-account public key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeTokenFile writes the static token file (--token-auth-file): token,
// user, uid and a quoted group list per line.
func writeTokenFile(path, adminToken, userToken string) error {
	content := fmt.Sprintf("%s,%s,%s-uid,\"system:masters\"\n%s,%s,%s-uid\n",
		adminToken, AdminName, AdminName, userToken, UserName, UserName)
	return os.WriteFile(path, []byte(content), 0o600)
}

// writeKubeconfig writes a kubeconfig for server that verifies the API
// server's self-signed certificate against caFile (it carries 127.0.0.1 as
// an IP SAN because the server binds there) and authenticates with token.
func writeKubeconfig(path, server, caFile, user, token string) error {
	const name = "sitebus-e2e"
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{
			"name":    name,
			"cluster": map[string]any{"server": server, "certificate-authority": caFile},
		}},
		"users": []any{map[string]any{
			"name": user,
			"user": map[string]any{"token": token},
		}},
		"contexts": []any{map[string]any{
			"name":    name,
			"context": map[string]any{"cluster": name, "user": user},
		}},
		"current-context": name,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("marshal kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
