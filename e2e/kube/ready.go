package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
)

// probe polls a health endpoint of a starting component.
type probe struct {
	url string
	// caFile verifies an https server. The servers write their self-signed
	// certificate at start, so it is read on every attempt until it exists.
	caFile string
	token  string
	// want, if set, must occur in the body (etcd's /health says 200 with
	// {"health":"false"} while it has no leader).
	want string
	proc *harness.Process
}

// wait polls until the endpoint answers 200, ctx ends or the process exits.
func (pr probe) wait(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		body, err := pr.get(ctx)
		switch {
		case err == nil && strings.Contains(body, pr.want):
			return nil
		case err == nil:
			last = "unexpected body: " + strings.TrimSpace(body)
		case !errors.Is(err, context.Canceled):
			last = err.Error()
		}
		if pr.proc.Exited() {
			return fmt.Errorf("%s exited before %s was healthy (last: %s)", pr.proc.Name, pr.url, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy (last: %s): %w", pr.url, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func (pr probe) get(ctx context.Context) (string, error) {
	client, err := pr.client()
	if err != nil {
		return "", err
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.url, nil)
	if err != nil {
		return "", err
	}
	if pr.token != "" {
		req.Header.Set("Authorization", "Bearer "+pr.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

func (pr probe) client() (*http.Client, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	if pr.caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(pr.caFile)
	if err != nil {
		return nil, fmt.Errorf("server certificate not written yet: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s yet", pr.caFile)
	}
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return c, nil
}

// startProcess starts one of the cluster's processes, keeps it in *slot
// (under c.mu, as Stop reads it) and waits until pr, probing it, passes.
func (c *Cluster) startProcess(ctx context.Context, name, bin string, args []string, slot **harness.Process, pr probe) error {
	p, err := harness.StartProcess(name, bin, args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	*slot = p
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	pr.proc = p
	if err := pr.wait(wctx); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
