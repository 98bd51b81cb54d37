package config

import (
	"errors"
	"strings"
	"testing"
)

// baseLines is a minimal valid config; tests replace or append lines and
// can rely on line numbers: key lines are 1-based indexes into this slice.
var baseLines = []string{
	"offerings:", // 1
	"  - name: k8s-prod",
	"    waldur_api_url: https://waldur.example.com/api/",
	"    waldur_api_token: tok-S3CRET-value",
	"    waldur_offering_uuid: 7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8", // 5
	"    backend_type: k8s-ut-namespace",                             // 6
}

const secretToken = "tok-S3CRET-value"

// conf returns baseLines with the offering keys in set replaced in place
// (a "" value comments the line out, keeping line numbers) and extra lines
// appended from line 7.
func conf(set map[string]string, extra ...string) []byte {
	lines := append([]string(nil), baseLines...)
	for key, val := range set {
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " -"), key+":") {
				prefix := l[:strings.Index(l, key)]
				if val == "" {
					lines[i] = strings.Repeat(" ", len(prefix)) + "# " + key + " unset"
				} else {
					lines[i] = prefix + key + ": " + val
				}
			}
		}
	}
	return []byte(strings.Join(append(lines, extra...), "\n") + "\n")
}

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustParse(t *testing.T, data []byte, env func(string) (string, bool)) *Root {
	t.Helper()
	r, err := Parse(data, "config.yaml", env)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return r
}

// problemsOf splits a joined error into its messages.
func problemsOf(err error) []string {
	if err == nil {
		return nil
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []string
		for _, e := range joined.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// wantProblems asserts that err holds exactly the given messages, in order.
func wantProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	got := problemsOf(err)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems mismatch\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
