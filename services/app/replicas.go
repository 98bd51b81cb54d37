package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
)

const replicasKey = "sitebus.streams.replicas"

// checkEmbeddedReplicas refuses more than one replica with the embedded
// server: it is a cluster of one. Run and config check both apply it once
// --nats-url has been applied.
func checkEmbeddedReplicas(cfg *config.Root) error {
	n := cfg.Sitebus.Streams.Replicas
	if cfg.Sitebus.NATSURL != "" || n <= 1 {
		return nil
	}
	return cfg.Problem(replicasKey, "%d replicas need a JetStream cluster of at least %d servers, and the embedded NATS server (nats_url empty) is one: set replicas to 1, or nats_url (--nats-url) to a cluster", n, n)
}

// replicasError explains JetStream refusing to place a stream: with more
// than one replica, the count is the likely cause, so the error names the
// key; the server's own error is kept.
func replicasError(cfg *config.Root, err error) error {
	n := cfg.Sitebus.Streams.Replicas
	if n <= 1 || !bus.IsInsufficientReplicas(err) {
		return err
	}
	p := cfg.Problem(replicasKey, "JetStream cannot place %d replicas: the cluster at nats_url has fewer than %d servers with JetStream up (or no storage left); lower the count or grow the cluster", n, n)
	return fmt.Errorf("%w (%w)", p, err)
}

// CheckReplicas is config check's look at sitebus.streams.replicas. With
// the embedded server, more than one replica is refused. With nats_url,
// the server is asked (ctx bounds the wait) how many servers its cluster
// has, and a larger count is refused; a server that cannot be reached is
// reported in the note, not as an error, since run waits for it.
func CheckReplicas(ctx context.Context, cfg *config.Root) (note string, err error) {
	n := cfg.Sitebus.Streams.Replicas
	if err := checkEmbeddedReplicas(cfg); err != nil {
		return "", err
	}
	if cfg.Sitebus.NATSURL == "" {
		return fmt.Sprintf("streams: %d replica (embedded NATS server)", n), nil
	}
	c, err := probeNATS(ctx, cfg.Sitebus.NATSURL)
	if err != nil {
		return fmt.Sprintf("streams: %d replica(s); not checked against the cluster: NATS not reachable: %v", n, err), nil
	}
	servers := c.servers()
	switch {
	case servers == 0:
		return fmt.Sprintf("streams: %d replica(s); not checked: NATS cluster %q does not list its servers (no_advertise)", n, c.Cluster), nil
	case n > servers && c.Cluster == "":
		return "", cfg.Problem(replicasKey, "%d replicas need a JetStream cluster of at least %d servers, and the NATS server at nats_url is not clustered", n, n)
	case n > servers:
		return "", cfg.Problem(replicasKey, "%d replicas need a JetStream cluster of at least %d servers, and NATS cluster %q lists %d (a server that is down is not listed)", n, n, c.Cluster, servers)
	}
	if c.Cluster == "" {
		return fmt.Sprintf("streams: %d replica; NATS server is not clustered", n), nil
	}
	return fmt.Sprintf("streams: %d replica(s); NATS cluster %q lists %d servers", n, c.Cluster, servers), nil
}

// natsInfo is what a NATS server tells every client in the INFO line it
// greets it with.
type natsInfo struct {
	Cluster     string   `json:"cluster"`
	ConnectURLs []string `json:"connect_urls"`
}

// servers is the size of the cluster as the server knows it now: itself
// and the servers routed to it. 0: not advertised.
func (i natsInfo) servers() int {
	if i.Cluster == "" {
		return 1
	}
	return len(slices.Compact(slices.Sorted(slices.Values(i.ConnectURLs))))
}

// probeNATS reads the INFO of the first server of natsURL (a
// comma-separated list) that answers. Errors name host and port only:
// the URL may hold credentials.
func probeNATS(ctx context.Context, natsURL string) (natsInfo, error) {
	var errs []error
	for raw := range strings.SplitSeq(natsURL, ",") {
		addr, err := natsAddr(strings.TrimSpace(raw))
		if err == nil {
			var info natsInfo
			if info, err = readINFO(ctx, addr); err == nil {
				return info, nil
			}
		}
		errs = append(errs, err)
	}
	return natsInfo{}, errors.Join(errs...)
}

func natsAddr(raw string) (string, error) {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("a nats_url entry is not a URL")
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return "", fmt.Errorf("%s:// URLs are not probed", u.Scheme)
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// readINFO dials addr and reads the server's greeting, which comes before
// TLS and authentication, so no credentials are needed.
func readINFO(ctx context.Context, addr string) (natsInfo, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return natsInfo{}, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return natsInfo{}, fmt.Errorf("%s: %w", addr, err)
	}
	body, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return natsInfo{}, fmt.Errorf("%s did not greet like a NATS server", addr)
	}
	var info natsInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return natsInfo{}, fmt.Errorf("%s: INFO: %w", addr, err)
	}
	return info, nil
}
