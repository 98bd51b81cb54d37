// Package vmboot is the simulated VM's first boot: what cloud-init and the
// node's install script do with a server's user_data, as far as Vault and
// Rancher can tell. The OpenStack simulator calls it for a server that
// becomes ACTIVE, so a node registers with the Rancher simulator only if
// its user_data would have worked on a real site: the role-id and
// secret-id in it log in to the (real) Vault, the token read at its secret
// path is the one Rancher issued, and the install command names Rancher
// and the node's roles. A wrong template, a used secret-id or a role
// without the policy fails the boot, as it would fail a real node.
package vmboot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/pkg/vault"
)

// Register is what system-agent-install.sh does once it has the token:
// register hostname with roles (etcd, controlplane, worker) at the Rancher
// server's URL.
type Register func(ctx context.Context, server, token, hostname string, roles []string) error

// ErrBadUserData is a user_data a real node could not act on (no
// cloud-config, no install command, no role-id, ...).
var ErrBadUserData = errors.New("vmboot: user_data does not work")

// Plan is what a server's user_data tells the node to do.
type Plan struct {
	// Vault is false when the script carries the token itself.
	Vault bool
	// RoleID and SecretID are /etc/vault/role-id and /etc/vault/secret-id,
	// as the script logs in with them.
	RoleID, SecretID string
	// VaultAddr is the script's VAULT_ADDR; SecretPath is what it gives
	// `vault kv get` (secret/rancher/cluster-<uuid>).
	VaultAddr, SecretPath string
	// VaultSkipVerify is -tls-skip-verify; VaultCACert the PEM of the file
	// given as -ca-cert (from write_files).
	VaultSkipVerify bool
	VaultCACert     string
	// Token is the registration token written in the script (Vault false).
	Token string
	// Server is --server, InstallURL where curl fetches the install script
	// from (<server>/system-agent-install.sh).
	Server, InstallURL string
	// Roles are the role flags without dashes, in order.
	Roles []string
	// CurlInsecure is curl's --insecure (-k); CAChecksum is --ca-checksum.
	CurlInsecure bool
	CAChecksum   string
	// AuthorizedKeys are the SSH public keys cloud-init installs
	// (ssh_authorized_keys), nil when none.
	AuthorizedKeys []string
}

type writeFile struct {
	Path    string `yaml:"path"`
	Content string `yaml:"content"`
}

// Parse reads a server's user_data. Errors wrap ErrBadUserData.
func Parse(userData []byte) (Plan, error) {
	bad := func(format string, args ...any) (Plan, error) {
		return Plan{}, fmt.Errorf("%w: "+format, append([]any{ErrBadUserData}, args...)...)
	}
	if !bytes.HasPrefix(userData, []byte("#cloud-config\n")) {
		return bad("it does not start with #cloud-config")
	}
	var cfg struct {
		WriteFiles     []writeFile `yaml:"write_files"`
		AuthorizedKeys []string    `yaml:"ssh_authorized_keys"`
	}
	if err := yaml.Unmarshal(userData, &cfg); err != nil {
		return bad("cloud-init cannot parse it: %v", err)
	}
	files := map[string]string{}
	var scripts []string
	for _, f := range cfg.WriteFiles {
		files[f.Path] = f.Content
		if strings.Contains(f.Content, "system-agent-install.sh") {
			scripts = append(scripts, f.Path)
		}
	}
	if len(scripts) != 1 {
		return bad("%d write_files entries run system-agent-install.sh (%s), want exactly one", len(scripts), strings.Join(scripts, ", "))
	}
	script := files[scripts[0]]
	vars := assignments(script)
	p := Plan{AuthorizedKeys: cfg.AuthorizedKeys}
	var tokenVar string
	var installLines []string
	// One level of `if [ "$VAR" == "value" ]; then ... else ... fi`, as
	// Mastermind's template chooses the install line by $RKE_ROLE: only
	// the lines of the branch taken count.
	taken := true
	for _, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if m := ifRe.FindStringSubmatch(trimmed); m != nil {
			taken = vars[m[1]] == m[2]
			continue
		}
		switch trimmed {
		case "else":
			taken = !taken
			continue
		case "fi":
			taken = true
			continue
		}
		if !taken {
			continue
		}
		switch {
		case strings.Contains(line, "auth/approle/login"):
			w, err := words(line, vars)
			if err != nil {
				return bad("%s: %v", scripts[0], err)
			}
			p.Vault = true
			for _, x := range w {
				if v, ok := strings.CutPrefix(x, "role_id="); ok {
					p.RoleID = v
				}
				if v, ok := strings.CutPrefix(x, "secret_id="); ok {
					p.SecretID = v
				}
			}
			if err := tlsFlags(&p, w, files); err != nil {
				return bad("%s: %v", scripts[0], err)
			}
		case strings.Contains(line, " kv get "):
			w, err := words(line, vars)
			if err != nil {
				return bad("%s: %v", scripts[0], err)
			}
			if len(w) < 2 || !strings.HasSuffix(w[0], "=") || w[1] != "$(" {
				return bad("%s: the kv get line does not assign the token to a variable: %s", scripts[0], trimmed)
			}
			tokenVar = strings.TrimSuffix(w[0], "=")
			for i, x := range w {
				if x == "get" && i > 0 && w[i-1] == "kv" {
					for _, arg := range w[i+1:] {
						if arg != ")" && !strings.HasPrefix(arg, "-") {
							p.SecretPath = arg
						}
					}
				}
			}
			if err := tlsFlags(&p, w, files); err != nil {
				return bad("%s: %v", scripts[0], err)
			}
		case strings.Contains(line, "system-agent-install.sh"):
			installLines = append(installLines, line)
		}
	}
	if len(installLines) != 1 {
		return bad("%s has %d system-agent-install.sh command lines, want exactly one", scripts[0], len(installLines))
	}
	if p.Vault {
		if tokenVar == "" || p.SecretPath == "" {
			return bad("%s logs in to Vault but reads no token with `vault kv get -field=token <path>`", scripts[0])
		}
		vars[tokenVar] = fromVault
		p.VaultAddr = vars["VAULT_ADDR"]
		if p.VaultAddr == "" {
			return bad("%s sets no VAULT_ADDR", scripts[0])
		}
		for _, f := range []struct{ path, inScript, name string }{
			{"/etc/vault/role-id", p.RoleID, "role-id"},
			{"/etc/vault/secret-id", p.SecretID, "secret-id"},
		} {
			content, ok := files[f.path]
			if !ok {
				return bad("no %s in write_files", f.path)
			}
			if strings.TrimSpace(content) == "" || strings.TrimSpace(content) != f.inScript {
				return bad("%s does not hold the %s the script logs in with", f.path, f.name)
			}
		}
	}
	if err := install(&p, installLines[0], vars); err != nil {
		return bad("%s: %v", scripts[0], err)
	}
	return p, nil
}

var ifRe = regexp.MustCompile(`^if \[\[? "\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?" ==? "([^"]*)" \]\]?; then$`)

// fromVault stands for the token the script reads from Vault at run time.
const fromVault = "\x00token-from-vault\x00"

func tlsFlags(p *Plan, w []string, files map[string]string) error {
	for _, x := range w {
		if x == "-tls-skip-verify" || x == "--tls-skip-verify" {
			p.VaultSkipVerify = true
		}
		if path, ok := strings.CutPrefix(strings.TrimLeft(x, "-"), "ca-cert="); ok {
			pem, ok := files[path]
			if !ok {
				return fmt.Errorf("-ca-cert=%s is not in write_files", path)
			}
			p.VaultCACert = pem
		}
	}
	return nil
}

// install reads `curl ... <url> | sudo ... sh -s - --server <url> ...
// --token <token> <role flags>`.
func install(p *Plan, line string, vars map[string]string) error {
	w, err := words(line, vars)
	if err != nil {
		return err
	}
	pipe := slices.Index(w, "|")
	if pipe < 0 {
		return fmt.Errorf("the install line pipes nothing into sh: %s", strings.TrimSpace(line))
	}
	for _, x := range w[:pipe] {
		switch {
		case x == "--insecure" || x == "-k":
			p.CurlInsecure = true
		case strings.HasSuffix(x, "/system-agent-install.sh"):
			p.InstallURL = x
		}
	}
	args := w[pipe+1:]
	i := slices.Index(args, "sh")
	if i < 0 || len(args) < i+3 || args[i+1] != "-s" || args[i+2] != "-" {
		return fmt.Errorf("the install script is not run with `sh -s -`: %s", strings.TrimSpace(line))
	}
	args = args[i+3:]
	token := ""
	for j := 0; j < len(args); j++ {
		next := func() (string, error) {
			if j+1 >= len(args) {
				return "", fmt.Errorf("%s without a value", args[j])
			}
			j++
			return args[j], nil
		}
		switch args[j] {
		case "--server":
			if p.Server, err = next(); err != nil {
				return err
			}
		case "--token":
			if token, err = next(); err != nil {
				return err
			}
		case "--ca-checksum":
			if p.CAChecksum, err = next(); err != nil {
				return err
			}
		case "--label", "--taint", "--node-name", "--address", "--internal-address":
			if _, err = next(); err != nil {
				return err
			}
		case "--etcd", "--controlplane", "--worker":
			p.Roles = append(p.Roles, strings.TrimPrefix(args[j], "--"))
		default:
			return fmt.Errorf("unknown install flag %q", args[j])
		}
	}
	switch {
	case p.Server == "":
		return errors.New("no --server")
	case p.InstallURL != strings.TrimRight(p.Server, "/")+"/system-agent-install.sh":
		return fmt.Errorf("curl fetches %q, not the install script of --server %s", p.InstallURL, p.Server)
	case len(p.Roles) == 0:
		return errors.New("no role flag (--etcd, --controlplane, --worker)")
	case token == "":
		return errors.New("no --token")
	case p.Vault && token != fromVault:
		return errors.New("--token is not the token read from Vault")
	case !p.Vault && strings.Contains(token, fromVault):
		return errors.New("--token is not set")
	}
	if !p.Vault {
		p.Token = token
	}
	return nil
}

// Boot runs a server's first boot: parse its user_data, log in to Vault
// with its role-id and secret-id and read the token (when it uses Vault),
// then register hostname with register. The error says which step failed;
// Vault's refusals match fault.Rejected (pkg/vault marks a 4xx so).
func Boot(ctx context.Context, userData []byte, hostname string, register Register) error {
	p, err := Parse(userData)
	if err != nil {
		return err
	}
	token := p.Token
	if p.Vault {
		if token, err = p.readToken(ctx); err != nil {
			return fmt.Errorf("vmboot: %s: %w", hostname, err)
		}
	}
	if err := register(ctx, p.Server, token, hostname, p.Roles); err != nil {
		return fmt.Errorf("vmboot: %s: register with %s: %w", hostname, p.Server, err)
	}
	return nil
}

func (p Plan) readToken(ctx context.Context) (string, error) {
	caFile := ""
	if p.VaultCACert != "" {
		f, err := os.CreateTemp("", "vmboot-ca-*.pem")
		if err != nil {
			return "", err
		}
		defer func() { _ = os.Remove(f.Name()) }()
		_, werr := f.WriteString(p.VaultCACert)
		if err := errors.Join(werr, f.Close()); err != nil {
			return "", err
		}
		caFile = f.Name()
	}
	n, err := vault.NodeLogin(ctx, p.VaultAddr, !p.VaultSkipVerify, caFile, p.RoleID, p.SecretID)
	if err != nil {
		return "", fmt.Errorf("vault login: %w", err)
	}
	t, err := n.ReadToken(ctx, p.SecretPath)
	if err != nil {
		return "", fmt.Errorf("vault kv get %s: %w", p.SecretPath, err)
	}
	return t, nil
}

// RancherSim registers through the Rancher simulator's stand-in for
// system-agent-install.sh (ranchersim.RegisterPath). A token Rancher does
// not know is ranchersim.ErrRegistrationRefused.
func RancherSim(client *http.Client) Register {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, server, token, hostname string, roles []string) error {
		body, err := json.Marshal(ranchersim.Registration{Token: token, Hostname: hostname, Roles: roles})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(server, "/")+ranchersim.RegisterPath, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			return ranchersim.ErrRegistrationRefused
		case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated:
			return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
		}
		return nil
	}
}
