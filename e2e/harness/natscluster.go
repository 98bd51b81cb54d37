package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NATSCluster is a JetStream cluster of nats-server processes on
// loopback, each with its own store, for replicated streams.
type NATSCluster struct {
	Nodes []*NATSServer
	// Names are the nodes' server names, as JetStream reports leaders.
	Names    []string
	monitors []int
	t        testing.TB
}

// StartNATSCluster starts n clustered nats-servers and waits until the
// JetStream meta leader sees all of them current, so that streams with n
// replicas can be placed.
func StartNATSCluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	bin, err := NATSServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := &NATSCluster{t: t}
	routePorts := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		routePorts[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i])
	}
	for i := range n {
		dir := t.TempDir()
		node := &NATSServer{Port: FreePort(t), Store: filepath.Join(dir, "js"), bin: bin, conf: filepath.Join(dir, "nats.conf"), t: t}
		name := fmt.Sprintf("n%d", i+1)
		monitor := FreePort(t)
		// sync_interval: always, as sitebus's embedded server does.
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: sitebus-e2e
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, node.Port, monitor, node.Store, routePorts[i], strings.Join(routes, ", "))
		if err := os.WriteFile(node.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		node.Start()
		t.Cleanup(func() { node.Stop() })
		c.Nodes = append(c.Nodes, node)
		c.Names = append(c.Names, name)
		c.monitors = append(c.monitors, monitor)
	}
	Eventually(t, 60*time.Second, fmt.Sprintf("a JetStream meta leader seeing %d servers current", n), func() bool {
		return c.metaPeersCurrent() == n
	})
	return c
}

// URL lists every node's client URL, comma-separated, as --nats-url takes
// it: a client fails over to another node when its own goes away.
func (c *NATSCluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node is the node with the given server name.
func (c *NATSCluster) Node(name string) *NATSServer {
	for i, n := range c.Names {
		if n == name {
			return c.Nodes[i]
		}
	}
	c.t.Fatalf("no NATS node named %q", name)
	return nil
}

// metaPeersCurrent is how many servers the meta leader counts current,
// itself included (0: no leader found), from its monitoring endpoint (a
// follower's shows only the leader current).
func (c *NATSCluster) metaPeersCurrent() int {
	client := &http.Client{Timeout: time.Second}
	for i, port := range c.monitors {
		var jsz struct {
			Meta *struct {
				Leader   string `json:"leader"`
				Replicas []struct {
					Name    string `json:"name"`
					Current bool   `json:"current"`
					Offline bool   `json:"offline"`
				} `json:"replicas"`
			} `json:"meta_cluster"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/jsz", nil)
		resp, err := client.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&jsz)
			resp.Body.Close()
		}
		cancel()
		if err != nil || jsz.Meta == nil || jsz.Meta.Leader != c.Names[i] {
			continue
		}
		n := 1
		for _, r := range jsz.Meta.Replicas {
			if r.Current && !r.Offline {
				n++
			}
		}
		return n
	}
	return 0
}

// Kill SIGKILLs the server: a node lost, with nothing flushed or handed
// over. Start brings it back with its store.
func (n *NATSServer) Kill() {
	if n.proc != nil {
		n.proc.Kill()
	}
}
