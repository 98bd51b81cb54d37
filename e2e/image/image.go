// Package image builds sitebus's container image without a container
// engine: a distroless/static-like base layer made from local files, the
// statically linked binary on top, written as an OCI image layout tarball.
// Only linux/amd64 is built.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Name is the image the deploy/kubernetes kustomization points at.
const Name = "ghcr.io/sitebus/sitebus"

// NonRoot is distroless's "nonroot" user and group.
const NonRoot = 65532

// HTTPPort is where the Deployments serve /healthz, /readyz and /metrics.
const HTTPPort = "9090/tcp"

// Options are the inputs of one build; equal Options over the same sources
// give the same image digest.
type Options struct {
	RepoRoot string    // the workspace holding ./services/cmd/sitebus
	Version  string    // main.version and org.opencontainers.image.version
	Revision string    // git commit, org.opencontainers.image.revision
	Source   string    // org.opencontainers.image.source
	Created  time.Time // image and file times; SOURCE_DATE_EPOCH or the commit time
	CACerts  string    // CA bundle copied into the image
}

// DefaultCACerts is Debian's bundle, what distroless/static ships too.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// BuildBinary compiles sitebus statically for linux/amd64 into out.
// -buildvcs=false keeps the binary (and so the digest) independent of the
// checkout's dirty state; the commit is in the image labels instead.
func BuildBinary(ctx context.Context, o Options, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+o.Version, "-o", out, "./services/cmd/sitebus")
	cmd.Dir = o.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build sitebus: %w", err)
	}
	return nil
}

// Image assembles the image from a built binary.
func Image(o Options, binary string) (v1.Image, error) {
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	base, err := layer(o.Created, baseFiles(certs))
	if err != nil {
		return nil, err
	}
	app, err := layer(o.Created, []file{{name: "sitebus", mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: o.Created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "sitebus imagebuild: distroless/static-like base", Comment: "CA certificates, passwd, group, nsswitch.conf, /tmp"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "sitebus imagebuild: /sitebus " + o.Version}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = created
	user := fmt.Sprintf("%d:%d", NonRoot, NonRoot)
	cf.Config = v1.Config{
		User:         user,
		Entrypoint:   []string{"/sitebus"},
		Cmd:          []string{"run"},
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{HTTPPort: {}},
		Labels:       Labels(o),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	// The manifest carries the labels too, so a registry shows them
	// without fetching the config.
	return mutate.Annotations(img, Labels(o)).(v1.Image), nil
}

// Labels are the OCI annotations of the image (the repository has no
// licence file, so org.opencontainers.image.licenses is left out).
func Labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "sitebus",
		"org.opencontainers.image.description": "Connects the Waldur marketplace to Kubernetes platforms",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
	}
}

type file struct {
	name     string
	mode     int64 // permission bits plus setuid/setgid/sticky
	data     []byte
	dir      bool
	uid, gid int
}

// baseFiles is what gcr.io/distroless/static provides that sitebus needs:
// TLS roots for Waldur, Keycloak and the backends, users for the non-root
// UID, a writable /tmp and host-file-first name resolution.
func baseFiles(certs []byte) []file {
	return []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, dir: true, uid: NonRoot, gid: NonRoot},
		{name: "root", mode: 0o700, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

// layer writes files in the given order with fixed times and owners, so
// the same files always give the same layer digest.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Uid: f.uid, Gid: f.gid, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// WriteOCIArchive writes img as an OCI image layout, tagged Name:version,
// tarred into path (the form `skopeo copy oci-archive:` reads).
func WriteOCIArchive(img v1.Image, o Options, path string) error {
	dir, err := os.MkdirTemp("", "sitebus-oci-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a leftover temp dir harms nothing
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.Version,
		"io.containerd.image.name":          Name + ":" + o.Version,
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return tarDir(dir, path, o.Created)
}

// tarDir tars the layout in lexical order with fixed times, so the archive
// is as reproducible as the image.
func tarDir(dir, path string, mtime time.Time) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Mode: 0o644, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Build compiles sitebus and writes the image archive to path, returning
// the image.
func Build(ctx context.Context, o Options, path string) (v1.Image, error) {
	tmp, err := os.MkdirTemp("", "sitebus-bin-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a leftover temp dir harms nothing
	bin := filepath.Join(tmp, "sitebus")
	if err := BuildBinary(ctx, o, bin); err != nil {
		return nil, err
	}
	img, err := Image(o, bin)
	if err != nil {
		return nil, err
	}
	// Layers are opened lazily from the binary's bytes already in memory,
	// so the temporary binary may go once the archive is written.
	if err := WriteOCIArchive(img, o, path); err != nil {
		return nil, err
	}
	return img, nil
}
