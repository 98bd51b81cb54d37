package harness

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Command runs `sitebus <sub> -c CONFIG args...` against the site's
// config and environment, as an operator would from a shell (e.g.
// `sitebus migrate`), and returns its output and exit code.
func (s *Site) Command(t testing.TB, sub string, args ...string) (string, int) {
	t.Helper()
	bin, err := SitebusBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(s.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(Context(t, 2*time.Minute), bin, append([]string{sub, "-c", path}, args...)...)
	cmd.Env = append(cmd.Environ(), s.Env()...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// adoptionLines are the lines of `sitebus migrate`'s output about one
// object.
var adoptionLines = regexp.MustCompile(`(?m)^\s+(would adopt|adopted|REFUSES) \S+`)

// Adoptions are the object lines of a `sitebus migrate` output, trimmed.
func Adoptions(out string) []string {
	var got []string
	for _, m := range adoptionLines.FindAllString(out, -1) {
		got = append(got, strings.TrimSpace(m))
	}
	return got
}
