package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSecretSources(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "oidc")
	if err := os.WriteFile(secretFile, []byte("oidc-from-file\r\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oidc := []string{
		"    oidc_token_url: https://sso.example.com/token",
		"    oidc_client_id: agent",
	}
	tests := map[string]struct {
		data       []byte
		env        map[string]string
		wantToken  string
		wantSecret string
	}{
		"literal value": {
			data:      conf(nil),
			wantToken: secretToken,
		},
		"exact ${VAR} reads the environment": {
			data:      conf(map[string]string{"waldur_api_token": `"${WALDUR_TOKEN}"`}),
			env:       map[string]string{"WALDUR_TOKEN": "tok-from-env"},
			wantToken: "tok-from-env",
		},
		"unquoted ${VAR} reads the environment": {
			data:      conf(map[string]string{"waldur_api_token": `${WALDUR_TOKEN}`}),
			env:       map[string]string{"WALDUR_TOKEN": "tok-from-env"},
			wantToken: "tok-from-env",
		},
		"a value only containing ${VAR} is literal": {
			data:      conf(map[string]string{"waldur_api_token": `"pre-${WALDUR_TOKEN}"`}),
			env:       map[string]string{"WALDUR_TOKEN": "x"},
			wantToken: "pre-${WALDUR_TOKEN}",
		},
		"_file sibling with trailing newline trimmed": {
			data:      conf(map[string]string{"waldur_api_token": ""}, "    waldur_api_token_file: "+tokenFile),
			wantToken: "tok-from-file",
		},
		"empty literal token beside a _file is allowed": {
			data:      conf(map[string]string{"waldur_api_token": `""`}, "    waldur_api_token_file: "+tokenFile),
			wantToken: "tok-from-file",
		},
		"oidc secret from env": {
			data:       conf(map[string]string{"waldur_api_token": ""}, append(oidc, "    oidc_client_secret: ${OIDC_SECRET}")...),
			env:        map[string]string{"OIDC_SECRET": "oidc-from-env"},
			wantSecret: "oidc-from-env",
		},
		"oidc secret from file": {
			data:       conf(map[string]string{"waldur_api_token": ""}, append(oidc, "    oidc_client_secret_file: "+secretFile)...),
			wantSecret: "oidc-from-file",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := mustParse(t, tc.data, envOf(tc.env))
			eq(t, "token", r.Offerings[0].WaldurAPIToken.Reveal(), tc.wantToken)
			eq(t, "oidc secret", r.Offerings[0].OIDCClientSecret.Reveal(), tc.wantSecret)
		})
	}
}

func TestSecretSourceErrors(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(secretToken), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "absent")
	tests := map[string]struct {
		data []byte
		want []string
	}{
		"unset variable names the key and the variable": {
			data: conf(map[string]string{"waldur_api_token": "${NO_SUCH_VAR}"}),
			want: []string{`config.yaml:4: offerings[0] ("k8s-prod").waldur_api_token: environment variable NO_SUCH_VAR is not set`},
		},
		"unreadable file names the key": {
			data: conf(map[string]string{"waldur_api_token": ""}, "    waldur_api_token_file: "+missing),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").waldur_api_token_file: cannot read the secret file: open ` + missing + `: no such file or directory`},
		},
		"value and file both set": {
			data: conf(nil, "    waldur_api_token_file: "+tokenFile),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").waldur_api_token_file: set either waldur_api_token or waldur_api_token_file, not both`},
		},
		"oidc secret value and file both set": {
			data: conf(nil, "    oidc_client_secret: s", "    oidc_client_secret_file: "+tokenFile,
				"    oidc_token_url: https://sso.example.com/t", "    oidc_client_id: c"),
			want: []string{`config.yaml:8: offerings[0] ("k8s-prod").oidc_client_secret_file: set either oidc_client_secret or oidc_client_secret_file, not both`},
		},
		"secret given as a mapping": {
			data: conf(map[string]string{"waldur_api_token": "{value: " + secretToken + "}"}),
			want: []string{`config.yaml:4: offerings[0] ("k8s-prod").waldur_api_token: must be a string, not a mapping`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data, "config.yaml", noEnv)
			wantProblems(t, err, tc.want...)
			if strings.Contains(err.Error(), secretToken) {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	const oidcSecret = "oidc-S3CRET-value"
	r := mustParse(t, conf(nil,
		"    oidc_token_url: https://sso.example.com/token",
		"    oidc_client_id: agent",
		"    oidc_client_secret: "+oidcSecret,
	), noEnv)

	var slogJSON bytes.Buffer
	slog.New(slog.NewJSONHandler(&slogJSON, nil)).Info("loaded", "config", r, "token", r.Offerings[0].WaldurAPIToken)
	var slogText bytes.Buffer
	slog.New(slog.NewTextHandler(&slogText, nil)).Info("loaded", "config", r, "offering", r.Offerings[0])
	jsonOut, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	yamlOut, err := yaml.Marshal(r.Offerings[0])
	if err != nil {
		t.Fatal(err)
	}

	outputs := map[string]string{
		"fmt %v":           fmt.Sprintf("%v", r),
		"fmt %+v":          fmt.Sprintf("%+v", r),
		"fmt %#v":          fmt.Sprintf("%#v", r),
		"fmt %s secret":    fmt.Sprintf("%s", r.Offerings[0].WaldurAPIToken), //nolint:staticcheck // the point is fmt's %s verb
		"fmt %q secret":    fmt.Sprintf("%q", r.Offerings[0].WaldurAPIToken),
		"fmt %x secret":    fmt.Sprintf("%x", r.Offerings[0].OIDCClientSecret),
		"fmt %+v offering": fmt.Sprintf("%+v", r.Offerings[0]),
		"slog JSON":        slogJSON.String(),
		"slog text":        slogText.String(),
		"json.Marshal":     string(jsonOut),
		"yaml.Marshal":     string(yamlOut),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			for _, s := range []string{secretToken, oidcSecret} {
				if strings.Contains(out, s) {
					t.Errorf("secret %q printed in:\n%s", s, out)
				}
			}
			if !strings.Contains(out, redacted) && !strings.Contains(out, fmt.Sprintf("%x", redacted)) {
				t.Errorf("expected %q in:\n%s", redacted, out)
			}
		})
	}
}

func TestSecretFormatting(t *testing.T) {
	tests := map[string]struct {
		secret                    Secret
		str, goStr, json, yamlOut string
	}{
		"set":   {"hunter2", "[redacted]", `"[redacted]"`, `"[redacted]"`, "'[redacted]'\n"},
		"empty": {"", "", `""`, `""`, "\"\"\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			eq(t, "String", tc.secret.String(), tc.str)
			eq(t, "GoString", tc.secret.GoString(), tc.goStr)
			eq(t, "%v", fmt.Sprintf("%v", tc.secret), tc.str)
			eq(t, "%#v", fmt.Sprintf("%#v", tc.secret), tc.goStr)
			eq(t, "LogValue", tc.secret.LogValue().String(), tc.str)
			j, _ := json.Marshal(tc.secret)
			eq(t, "json", string(j), tc.json)
			y, _ := yaml.Marshal(tc.secret)
			eq(t, "yaml", string(y), tc.yamlOut)
			eq(t, "Reveal", tc.secret.Reveal(), string(tc.secret))
		})
	}
}
