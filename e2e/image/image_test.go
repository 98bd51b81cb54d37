package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestImage builds the image as make image does, reads the archive back as
// an OCI layout, unpacks the filesystem and runs the binary from it, so a
// broken image fails CI; a second build must give the same digest.
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the image is linux/amd64 only; its binary cannot run on " + runtime.GOOS + "/" + runtime.GOARCH)
	}
	// The first build compiles every dependency again (-trimpath, no
	// cgo): on a fresh machine's two cores, with other packages testing
	// beside it, that once took over 10 minutes. It gets the package's
	// whole -timeout but a minute for the checks after it.
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	tmp := t.TempDir()
	o := Options{
		RepoRoot: "../..",
		Version:  "v0.0.0-imagetest",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Source:   "https://github.com/sitebus/sitebus",
		Created:  time.Unix(1700000000, 0).UTC(),
		CACerts:  DefaultCACerts,
	}
	archive := filepath.Join(tmp, "a.tar")
	if _, err := Build(ctx, o, archive); err != nil {
		t.Fatal(err)
	}
	img := readArchive(t, archive, filepath.Join(tmp, "layout"), o.Version)
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s, archive %.1f MB", digest, float64(st.Size())/1e6)
	if st.Size() > 100<<20 {
		t.Errorf("archive is %d bytes, over the 100 MB sanity bound", st.Size())
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/sitebus" || strings.Join(c.Cmd, " ") != "run" {
		t.Errorf("entrypoint %q cmd %q, want [/sitebus] [run]", c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts[HTTPPort]; !ok {
		t.Errorf("exposed ports %v lack %s", c.ExposedPorts, HTTPPort)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.created":  "2023-11-14T22:13:20Z",
		"org.opencontainers.image.source":   o.Source,
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	root := filepath.Join(tmp, "rootfs")
	headers := extract(t, img, root)
	if h := headers["tmp"]; h == nil || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp header %+v, want mode 1777", h)
	}
	if h := headers["home/nonroot"]; h == nil || h.Uid != NonRoot || h.Gid != NonRoot {
		t.Errorf("/home/nonroot header %+v, want owned by 65532", h)
	}
	if h := headers["sitebus"]; h == nil || h.Uid != 0 || h.Mode&0o777 != 0o755 {
		t.Errorf("/sitebus header %+v, want root-owned 0755 (not writable by the process)", h)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks nonroot 65532: %q %v", passwd, err)
	}
	group, err := os.ReadFile(filepath.Join(root, "etc/group"))
	if err != nil || !strings.Contains(string(group), "nonroot:x:65532:") {
		t.Errorf("/etc/group lacks nonroot 65532: %q %v", group, err)
	}
	certFile := envValue(c.Env, "SSL_CERT_FILE")
	certs, err := os.ReadFile(filepath.Join(root, strings.TrimPrefix(certFile, "/")))
	if certFile == "" || err != nil || !bytes.Contains(certs, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("CA bundle at SSL_CERT_FILE missing or empty: %v", err)
	}

	// The entrypoint as the config names it, from the unpacked tree: the
	// binary is static, so it needs nothing from the host.
	bin := filepath.Join(root, c.Entrypoint[0])
	if out := runBin(ctx, t, bin, "version"); !strings.Contains(out, "sitebus "+o.Version+" (") {
		t.Errorf("sitebus version printed %q, want the build's version %s", out, o.Version)
	}
	if out := runBin(ctx, t, bin, "--version"); !strings.Contains(out, "sitebus version "+o.Version) {
		t.Errorf("sitebus --version printed %q, want the build's version %s", out, o.Version)
	}
	help := runBin(ctx, t, bin, append(c.Cmd, "--help")...)
	for _, want := range []string{"--nats-url", "--only", "--http-addr"} {
		if !strings.Contains(help, want) {
			t.Errorf("sitebus run --help lacks %s:\n%s", want, help)
		}
	}

	again := filepath.Join(tmp, "b.tar")
	img2, err := Build(ctx, o, again)
	if err != nil {
		t.Fatal(err)
	}
	digest2, err := img2.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if digest2 != digest {
		t.Errorf("second build with the same inputs: digest %s, first %s", digest2, digest)
	}
	a, _ := os.ReadFile(archive)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("second build's archive differs from the first")
	}
}

// readArchive untars the archive and opens it as an OCI layout holding one
// image tagged with the version.
func readArchive(t *testing.T, archive, dir, version string) v1.Image {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		writeEntry(t, dir, h, tr)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(m.Manifests))
	}
	d := m.Manifests[0]
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != version {
		t.Errorf("ref.name %q, want %q", got, version)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// extract writes the flattened filesystem under root and returns each
// entry's header (modes and owners are checked there, not on disk, where
// the umask and the test's user would change them).
func extract(t *testing.T, img v1.Image, root string) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		headers[strings.TrimSuffix(h.Name, "/")] = h
		writeEntry(t, root, h, tr)
	}
}

func writeEntry(t *testing.T, root string, h *tar.Header, r io.Reader) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(h.Name))
	if !strings.HasPrefix(p, root+string(filepath.Separator)) {
		t.Fatalf("entry %q escapes the directory", h.Name)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode&0o777)|0o600)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("entry %q: unexpected type %c", h.Name, h.Typeflag)
	}
}

func runBin(ctx context.Context, t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{} // the image's binary must not depend on the test's environment
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
