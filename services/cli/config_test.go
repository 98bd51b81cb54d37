package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Distinctive secrets: none may appear in any output or error.
const (
	secretToken    = "tok-TOPSECRET-4f1c"
	secretOIDC     = "oidc-TOPSECRET-77aa"
	secretKeycloak = "kc-TOPSECRET-9b02"
	secretFileTok  = "file-TOPSECRET-31d0"
	secretEnvTok   = "env-TOPSECRET-5e6f"
	secretSentry   = "sentrykey-TOPSECRET-0c0c"
)

var secrets = []string{secretToken, secretOIDC, secretKeycloak, secretFileTok, secretEnvTok, secretSentry}

// offering is a valid k8s-ut-namespace offering with Keycloak; tests append
// keys to it (at offering level, "      " for backend_settings, "        "
// for the keycloak block) or replace lines.
func offering(name, uuid string) []string {
	return []string{
		"  - name: " + name,
		"    waldur_api_url: https://waldur.example.com/api/",
		"    waldur_api_token: " + secretToken,
		"    waldur_offering_uuid: " + uuid,
		"    backend_type: k8s-ut-namespace",
		"    order_processing_backend: k8s-ut-namespace",
		"    membership_sync_backend: k8s-ut-namespace",
		"    backend_settings:",
		"      namespace_prefix: \"\"",
		"      keycloak_enabled: true",
		"      keycloak:",
		"        keycloak_url: https://kc.example.com/auth/",
		"        keycloak_username: sitebus",
		"        keycloak_password: " + secretKeycloak,
	}
}

func writeConfig(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func withOffering(extra ...string) []string {
	return append(append([]string{"offerings:"}, offering("k8s", "7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8")...), extra...)
}

// replace returns lines with the line starting with prefix (after
// indentation) replaced by with.
func replace(lines []string, prefix, with string) []string {
	out := append([]string(nil), lines...)
	for i, l := range out {
		if strings.HasPrefix(strings.TrimLeft(l, " -"), prefix) {
			out[i] = with
		}
	}
	return out
}

// execute runs the sitebus command line and returns its output and error.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	root := New("test")
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = root.ExecuteContext(ctx)
	return o.String(), e.String(), err
}

// What `sitebus run` refuses, `sitebus config check` refuses with the same
// message, since both go through app.LoadPlan.
func TestConfigCheckRefusesWhatRunRefuses(t *testing.T) {
	tests := map[string]struct {
		lines []string
		want  string // a part of the message
	}{
		"unsupported backend_type names the supported ones": {
			lines: replace(withOffering(), "backend_type:", "    backend_type: slurm"),
			want:  `config.yaml:6: offerings[0] ("k8s").backend_type: "slurm" is not supported (supported: k8s-ut-namespace, rancher, okd, rancher-cluster, vcluster)`,
		},
		"unsupported order_processing_backend": {
			lines: replace(withOffering(), "order_processing_backend:", "    order_processing_backend: slurm"),
			want:  `config.yaml:7: offerings[0] ("k8s").order_processing_backend: "slurm" is not supported (supported: k8s-ut-namespace, rancher, okd, rancher-cluster, vcluster; "" disables it)`,
		},
		"bad backend_settings value": {
			lines: withOffering("      cr_namespace: 12"),
			want:  `config.yaml:16: offerings[0] ("k8s").backend_settings.cr_namespace: must be a string, not a number`,
		},
		"explicit empty backend_settings value that cannot work": {
			lines: withOffering(`      cr_namespace: ""`),
			want:  `config.yaml:16: offerings[0] ("k8s").backend_settings.cr_namespace: "" is not a valid namespace name (RFC 1123 label)`,
		},
		"bad keycloak block": {
			lines: withOffering(`        keycloak_realm: ""`, "        keycloak_ssl_verify: [no]"),
			want:  `config.yaml:17: offerings[0] ("k8s").backend_settings.keycloak.keycloak_ssl_verify: must be a boolean or a CA bundle path, not a list`,
		},
		"keycloak block that is not a mapping": {
			lines: append(withOffering()[:11], "      keycloak: "+secretKeycloak),
			want:  `config.yaml:12: offerings[0] ("k8s").backend_settings.keycloak: must be a mapping, not a string`,
		},
		"unknown service": {
			lines: withOffering("sitebus:", "  services: [orders-service]"),
			want:  `config.yaml:17: sitebus.services[0]: "orders-service" is not a service (known: stomp-bridge`,
		},
		"explicit zero prefetch": {
			lines: withOffering("sitebus:", "  stomp: {prefetch_count: 0}"),
			want:  `config.yaml:17: sitebus.stomp.prefetch_count: 0 must be at least 1`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.lines...)
			_, _, checkErr := execute(t, "config", "check", "-c", path)
			if checkErr == nil {
				t.Fatal("config check accepted it")
			}
			if !strings.Contains(checkErr.Error(), strings.Replace(tc.want, "config.yaml", path, 1)) {
				t.Errorf("config check: %v\nwant: %s", checkErr, tc.want)
			}
			_, _, runErr := execute(t, "run", "-c", path, "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0")
			if runErr == nil || runErr.Error() != checkErr.Error() {
				t.Errorf("run and check differ:\n run: %v\ncheck: %v", runErr, checkErr)
			}
		})
	}
}

func TestConfigCheckPrintsWarningsForUnknownKeys(t *testing.T) {
	path := writeConfig(t, withOffering(
		"        keycloak_relm: hpc",
		"      namespace_prefx: x-",
		"    verfy_ssl: false",
	)...)
	out, _, err := execute(t, "config", "check", "-c", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		path + `:18: warning: offerings[0] ("k8s").verfy_ssl: unknown key "verfy_ssl" is ignored (did you mean "verify_ssl"?)`,
		path + `:17: warning: offerings[0] ("k8s").backend_settings.namespace_prefx: unknown key "namespace_prefx" is ignored (did you mean "namespace_prefix"?)`,
		path + `:16: warning: offerings[0] ("k8s").backend_settings.keycloak.keycloak_relm: unknown key "keycloak_relm" is ignored (did you mean "keycloak_realm"?)`,
		`ManagedNamespaces in "waldur-system" named "" + slug`,
		`keycloak: https://kc.example.com/auth/ realm "waldur"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// No secret reaches the output or an error, for valid files and for every
// kind of invalid one.
func TestConfigCheckNeverShowsSecrets(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(secretFileTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SITEBUS_TEST_TOKEN", secretEnvTok)
	oidc := []string{
		"  - name: oidc",
		"    waldur_api_url: https://waldur.example.com/api/",
		"    oidc_token_url: https://sso.example.com/token",
		"    oidc_client_id: sitebus",
		"    oidc_client_secret: " + secretOIDC,
		"    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d",
		"    backend_type: k8s-ut-namespace",
	}
	valid := append(withOffering(oidc...),
		"sentry_dsn: https://"+secretSentry+"@sentry.example.com/1")
	tests := map[string][]string{
		"valid":                         valid,
		"secrets from env and file":     append(replace(valid, "waldur_api_token:", "    waldur_api_token: ${SITEBUS_TEST_TOKEN}"), "  - name: f", "    waldur_api_url: https://w.example.com/", "    waldur_api_token_file: "+tokenFile, "    waldur_offering_uuid: 1a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "    backend_type: slurm"),
		"token of the wrong type":       replace(valid, "waldur_api_token:", "    waldur_api_token: ["+secretToken+"]"),
		"token and token file together": append(valid, "    waldur_api_token_file: "+tokenFile),
		"secret under a misspelt key":   append(valid, "    waldur_api_tokn: "+secretToken, "    oidc_client_secert: "+secretOIDC),
		"keycloak password of the wrong type": replace(valid, "keycloak_password:",
			"        keycloak_password: {"+secretKeycloak+": 1}"),
		"keycloak password under a misspelt key": append(withOffering(), "        keycloak_pasword: "+secretKeycloak),
		"keycloak block invalid":                 replace(valid, "keycloak_url:", "        keycloak_realm: \"\""),
		"sentry dsn invalid":                     append(withOffering(), "sentry_dsn: "+secretSentry+" not a url"),
		"oidc incomplete":                        replace(valid, "oidc_token_url:", "    # no token url"),
		"unsupported backend":                    replace(valid, "backend_type: k8s", "    backend_type: "+"slurm"),
		"yaml syntax error":                      append(valid, "\t"+secretToken),
	}
	for name, lines := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, lines...)
			out, errOut, err := execute(t, "config", "check", "-c", path)
			all := out + errOut
			if err != nil {
				all += err.Error()
			}
			for _, s := range secrets {
				if strings.Contains(all, s) {
					t.Errorf("secret %q shown:\n%s", s, all)
				}
			}
		})
	}
}
