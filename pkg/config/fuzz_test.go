package config

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds the config parser any document an operator (or a broken
// deployment tool) may write, with ${VAR} references answered by one
// environment value. Properties:
//   - a config Parse accepts re-validates: Validate finds nothing;
//   - parsing is a function of its input: the same document and
//     environment give the same config (as JSON), so what `sitebus config
//     check` approved is what `sitebus run` uses;
//   - a secret read from the environment never appears in an error, in
//     the config printed with %+v, or in its JSON, whatever the document.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"k8s-ut-namespace.yaml", "okd.yaml", "rancher.yaml", "oidc.yaml"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "env-S3CRET-value-1")
	}
	example, err := os.ReadFile("example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example, "env-S3CRET-value-1")
	f.Add(conf(map[string]string{"waldur_api_token": `"${WALDUR_API_TOKEN}"`}), "env-S3CRET-value-2")
	f.Add(conf(map[string]string{"waldur_api_token": `"${NOPE"`}), "env-S3CRET-value-3")
	f.Add(conf(map[string]string{"waldur_api_token": "${A}"}, "    waldur_api_token_file: /etc/passwd"), "env-S3CRET-value-4")
	f.Add([]byte("offerings: &a [*a]\n"), "x")
	f.Add([]byte("a: 1\n---\nb: 2\n"), "x")
	f.Fuzz(func(t *testing.T, data []byte, envValue string) {
		lookup := func(name string) (string, bool) {
			if strings.HasPrefix(name, "WALDUR_SITE_AGENT_") || name == EnvLogLevel {
				return "", false // overrides, not secrets
			}
			return envValue, true
		}
		r, err := Parse(data, "fuzz.yaml", lookup)
		// Only a value that occurs nowhere in the document can prove a
		// leak: anything else may be quoted from the file itself.
		secret := len(envValue) >= 8 && !strings.Contains(string(data), envValue) && !strings.Contains("fuzz.yaml", envValue)
		if err != nil {
			if r != nil {
				t.Fatal("Parse returned a config with its error")
			}
			if secret && strings.Contains(err.Error(), envValue) {
				t.Fatalf("the environment's secret is in the error: %v", err)
			}
			return
		}
		if verr := r.Validate(); verr != nil {
			t.Fatalf("Parse accepted a config Validate refuses: %v", verr)
		}
		first, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("the config does not encode: %v", err)
		}
		again, err := Parse(data, "fuzz.yaml", lookup)
		if err != nil {
			t.Fatalf("the same document failed the second time: %v", err)
		}
		second, _ := json.Marshal(again)
		if string(first) != string(second) {
			t.Fatalf("one document, two configs:\n%s\n%s", first, second)
		}
		if secret && (strings.Contains(string(first), envValue) || strings.Contains(fmt.Sprintf("%+v", r), envValue) ||
			strings.Contains(fmt.Sprintf("%#v", r), envValue)) {
			t.Fatal("the environment's secret is printed with the config")
		}
	})
}
