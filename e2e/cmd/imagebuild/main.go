// Command imagebuild writes sitebus's container image as an OCI layout
// tarball without a container engine (make image). Run it from the
// repository root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/image"
)

func main() {
	o := image.Options{RepoRoot: "."}
	out := flag.String("o", "bin/sitebus-image.tar", "OCI archive to write")
	flag.StringVar(&o.Version, "version", "dev", "version for main.version and the labels")
	flag.StringVar(&o.Revision, "revision", "", "git commit (default: HEAD)")
	flag.StringVar(&o.Source, "source", "https://github.com/sitebus/sitebus", "source repository label")
	flag.StringVar(&o.CACerts, "ca-certs", image.DefaultCACerts, "CA bundle to put into the image")
	flag.Parse()
	if err := run(&o, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o *image.Options, out string) error {
	ctx := context.Background()
	if o.Revision == "" {
		rev, err := git(ctx, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		o.Revision = rev
	}
	// SOURCE_DATE_EPOCH (reproducible-builds.org) wins; otherwise the
	// commit time, so rebuilding a commit gives the same digest.
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		t, err := git(ctx, "log", "-1", "--format=%ct", o.Revision)
		if err != nil {
			return err
		}
		epoch = t
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
	}
	o.Created = time.Unix(sec, 0).UTC()
	img, err := image.Build(ctx, *o, out)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("%s:%s (linux/amd64, revision %s)\n", image.Name, o.Version, o.Revision)
	fmt.Printf("digest %s\n%s: %.1f MB\n", digest, out, float64(st.Size())/1e6)
	return nil
}

func git(ctx context.Context, args ...string) (string, error) {
	b, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
