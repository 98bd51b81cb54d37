package cli_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/services/cli"
)

func TestVersionPrintsTheBuildsVersionAndToolchain(t *testing.T) {
	root := cli.New("v1.2.3-test")
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sitebus v1.2.3-test", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version printed %q, want %q in it", out.String(), want)
		}
	}
}
