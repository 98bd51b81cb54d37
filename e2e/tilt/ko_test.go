package tilt

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestKoBuildPushesARunnableImage runs deploy/dev/ko-build.sh as the
// Tiltfile's custom_build runs it in k8s mode (EXPECTED_REF and
// EXPECTED_TAG naming a registry, here an in-process one on loopback):
// the sitebus image must arrive under exactly that reference, for
// linux/amd64 on the given base, and its binary must run.
func TestKoBuildPushesARunnableImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("runs the linux/amd64 binary from the image; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root := repoRoot(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://") // 127.0.0.1:port: plain HTTP for ko too

	// A base with no layers, only the platform and the non-root user.
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS: "linux", Architecture: "amd64",
		Config: v1.Config{User: "65532:65532"},
	})
	if err != nil {
		t.Fatal(err)
	}
	baseRef, err := name.ParseReference(host + "/base:nonroot")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}

	// What Tilt sets when its registry is host (the image name escaped).
	const tag = "tilt-build-1700000000"
	want := host + "/ghcr.io_sitebus_sitebus:" + tag
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy/dev/ko-build.sh"), "./services/cmd/sitebus")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "EXPECTED_REF="+want, "EXPECTED_TAG="+tag,
		"KO_DEFAULTBASEIMAGE="+baseRef.String(), "KO_PLATFORM=linux/amd64")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ko-build.sh: %v\n%s", err, out)
	}
	t.Logf("ko build and push took %s", time.Since(start).Round(100*time.Millisecond))
	if !strings.Contains(string(out), want+"@sha256:") {
		t.Errorf("ko did not report pushing %s:\n%s", want, out)
	}

	ref, err := name.ParseReference(want)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("the image Tilt expects is not in the registry: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want the base's non-root 65532:65532", cfg.Config.User)
	}
	if len(cfg.Config.Entrypoint) != 1 {
		t.Fatalf("entrypoint %v, want the sitebus binary", cfg.Config.Entrypoint)
	}

	bin := extractFile(t, img, cfg.Config.Entrypoint[0])
	version, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", cfg.Config.Entrypoint[0], err, version)
	}
	// ko-build.sh stamps main.version, as make build does.
	if !strings.HasPrefix(string(version), "sitebus tilt-dev ") {
		t.Errorf("sitebus version = %q, want it to start with %q", version, "sitebus tilt-dev ")
	}
}

// extractFile writes the file at path in img's flattened filesystem to a
// temporary executable and returns its path.
func extractFile(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path, "/")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the image", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") != want {
			continue
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}
